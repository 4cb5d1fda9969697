;; Test module for package wasmrt: a WASI command speaking ABI v1.
;; Layout: stdin is read to 1024; the request's method starts at byte 19
;; and, for a call, the tool name at byte 33 (the host marshals
;; {"abi":1,"method":…,"tool":…} in that field order). Real tools parse JSON.
;; Manifest declares ABI v2.
(module
  (import "wasi_snapshot_preview1" "fd_read" (func $fd_read (param i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "fd_write" (func $fd_write (param i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "proc_exit" (func $proc_exit (param i32)))
  (memory (export "memory") 1)
  (data (i32.const 8192) "{\"abi\":2,\"name\":\"test\",\"tools\":[{\"name\":\"run\"}]}")
  (data (i32.const 12288) "{\"content\":[{\"type\":\"text\",\"text\":\"hello\"}]}")
  ;; write len bytes at ptr to fd; returns the errno
  (func $write (param $fd i32) (param $ptr i32) (param $len i32) (result i32)
    (i32.store (i32.const 0) (local.get $ptr))
    (i32.store (i32.const 4) (local.get $len))
    (call $fd_write (local.get $fd) (i32.const 0) (i32.const 1) (i32.const 16)))
  ;; read all of stdin to 1024 (at most 4096 bytes)
  (func $read_all (local $off i32)
    (local.set $off (i32.const 1024))
    (block $done (loop $more
      (i32.store (i32.const 0) (local.get $off))
      (i32.store (i32.const 4) (i32.sub (i32.const 5120) (local.get $off)))
      (br_if $done (call $fd_read (i32.const 0) (i32.const 0) (i32.const 1) (i32.const 16)))
      (br_if $done (i32.eqz (i32.load (i32.const 16))))
      (local.set $off (i32.add (local.get $off) (i32.load (i32.const 16))))
      (br_if $done (i32.ge_u (local.get $off) (i32.const 5120)))
      (br $more))))

  (func $run
    (drop (call $write (i32.const 1) (i32.const 12288) (i32.const 44))))
  (func (export "_start")
    (call $read_all)
    (if (i32.eq (i32.load8_u (i32.const 1043)) (i32.const 100)) ;; 'd'escribe
      (then (drop (call $write (i32.const 1) (i32.const 8192) (i32.const 48))) (return)))
    (call $run))
)
