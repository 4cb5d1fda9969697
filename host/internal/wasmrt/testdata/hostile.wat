;; Test module for package wasmrt: a WASI command speaking ABI v1.
;; Layout: stdin is read to 1024; the request's method starts at byte 19
;; and, for a call, the tool name at byte 33 (the host marshals
;; {"abi":1,"method":…,"tool":…} in that field order). Real tools parse JSON.
;; Tools that misbehave: trap, loop, oom, garbage, flood, wild, elicit, xit, sleep, big.
(module
  (import "wasi_snapshot_preview1" "fd_read" (func $fd_read (param i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "fd_write" (func $fd_write (param i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "proc_exit" (func $proc_exit (param i32)))
  (import "wasi_snapshot_preview1" "poll_oneoff" (func $poll_oneoff (param i32 i32 i32 i32) (result i32)))
  (import "wasmtask_v1" "log" (func $log (param i32 i32 i32)))
  (import "wasmtask_v1" "elicit" (func $elicit (param i32 i32) (result i32)))
  (memory (export "memory") 1)
  (data (i32.const 8192) "{\"abi\":1,\"name\":\"test\",\"tools\":[{\"name\":\"trap\"},{\"name\":\"loop\"},{\"name\":\"oom\"},{\"name\":\"garbage\"},{\"name\":\"flood\"},{\"name\":\"wild\"},{\"name\":\"elicit\"},{\"name\":\"xit\"},{\"name\":\"sleep\"},{\"name\":\"big\"}]}")
  (data (i32.const 12288) "{\"content\":[{\"type\":\"text\",\"text\":\"hello\"}]}")
  (data (i32.const 40000) "{\"content\":[{\"type\":\"text\",\"text\":\"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\"}]}")
  (data (i32.const 24576) "out of memory\n")
  (data (i32.const 24600) "not json :-(")
  (data (i32.const 24640) "{\"message\":\"name?\",\"requestedSchema\":{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\"}}}}")
  (data (i32.const 24800) "bad thing\n")
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
    (local $t i32)
    (local.set $t (i32.load8_u (i32.const 1057)))
    (if (i32.eq (local.get $t) (i32.const 116)) (then unreachable)) ;; trap
    (if (i32.eq (local.get $t) (i32.const 108)) (then (loop $l (br $l)))) ;; loop
    (if (i32.eq (local.get $t) (i32.const 111)) (then ;; oom: grow until refused, then trap
      (loop $g (br_if $g (i32.ne (memory.grow (i32.const 16)) (i32.const -1))))
      (drop (call $write (i32.const 2) (i32.const 24576) (i32.const 14)))
      unreachable))
    (if (i32.eq (local.get $t) (i32.const 103)) (then ;; garbage
      (drop (call $write (i32.const 1) (i32.const 24600) (i32.const 12))) (return)))
    (if (i32.eq (local.get $t) (i32.const 102)) (then ;; flood: write until the host refuses, forever
      (loop $w (drop (call $write (i32.const 1) (i32.const 24600) (i32.const 4096))) (br $w))))
    (if (i32.eq (local.get $t) (i32.const 119)) (then ;; wild pointer
      (call $log (i32.const 1) (i32.const 0xFFFFFF00) (i32.const 4096)) (return)))
    (if (i32.eq (local.get $t) (i32.const 101)) (then ;; elicit, then finish normally
      (drop (call $elicit (i32.const 24640) (i32.const 95)))
      (drop (call $write (i32.const 1) (i32.const 12288) (i32.const 44))) (return)))
    (if (i32.eq (local.get $t) (i32.const 120)) (then ;; exit code 3 with a message
      (drop (call $write (i32.const 2) (i32.const 24800) (i32.const 10)))
      (call $proc_exit (i32.const 3))))
    (if (i32.eq (local.get $t) (i32.const 115)) (then ;; sleep one hour in poll_oneoff
      (i64.store (i32.const 32768) (i64.const 0))           ;; userdata
      (i32.store8 (i32.const 32776) (i32.const 0))          ;; tag: clock
      (i32.store (i32.const 32784) (i32.const 1))           ;; clock id: monotonic
      (i64.store (i32.const 32792) (i64.const 3600000000000)) ;; timeout ns
      (i64.store (i32.const 32800) (i64.const 0))           ;; precision
      (i32.store16 (i32.const 32808) (i32.const 0))         ;; flags: relative
      (drop (call $poll_oneoff (i32.const 32768) (i32.const 33024) (i32.const 1) (i32.const 16)))
      (drop (call $write (i32.const 1) (i32.const 12288) (i32.const 44))) (return)))
    ;; big: a valid result larger than a small output limit
    (drop (call $write (i32.const 1) (i32.const 40000) (i32.const 3039))))
  (func (export "_start")
    (call $read_all)
    (if (i32.eq (i32.load8_u (i32.const 1043)) (i32.const 100)) ;; 'd'escribe
      (then (drop (call $write (i32.const 1) (i32.const 8192) (i32.const 197))) (return)))
    (call $run))
)
