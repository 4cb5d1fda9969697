;; Test module for pre-initialisation (snapshot.go): _initialize sets a
;; mutable global and writes to memory (and, with the "hostcall" build
;; below, calls a host function); every call reports what it finds, then
;; overwrites it, grows memory and writes a marker there.
;; Output of a call: {"content":[{"type":"text","text":"GMXZ"}]} where G is
;; the global as a digit, M the memory byte at 200, X the byte at 65536*2
;; (past the initial memory: 0 if zero, else 'X'), Z the initialized count.
(module
  (import "wasi_snapshot_preview1" "fd_read" (func $fd_read (param i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "fd_write" (func $fd_write (param i32 i32 i32 i32) (result i32)))
  (import "wasmtask_v1" "status" (func $status (param i32 i32)))
  (memory (export "memory") 2)
  (global $g (mut i32) (i32.const 0))
  (global $inits (mut i32) (i32.const 0))
  (data (i32.const 8192) "{\"abi\":1,\"name\":\"preinit\",\"tools\":[{\"name\":\"state\",\"description\":\"Reports the state it starts from.\"},{\"name\":\"hostcall\",\"description\":\"Unused.\"}]}")
  (data (i32.const 12288) "{\"content\":[{\"type\":\"text\",\"text\":\"")
  (data (i32.const 12336) "\"}]}")
  (func $write (param $fd i32) (param $ptr i32) (param $len i32)
    (i32.store (i32.const 0) (local.get $ptr))
    (i32.store (i32.const 4) (local.get $len))
    (drop (call $fd_write (local.get $fd) (i32.const 0) (i32.const 1) (i32.const 16))))
  (func (export "_initialize")
    (global.set $g (i32.const 7))
    (global.set $inits (i32.add (global.get $inits) (i32.const 1)))
    (i32.store8 (i32.const 200) (i32.const 65)) ;; 'A'
    ;; a byte at 1024 'H' asks to call the host (set only by the hostcall build)
    (if (i32.eq (i32.load8_u (i32.const 1024)) (i32.const 72))
      (then (call $status (i32.const 0) (i32.const 0)))))
  (func (export "_start")
    (i32.store (i32.const 0) (i32.const 1024))
    (i32.store (i32.const 4) (i32.const 4096))
    (drop (call $fd_read (i32.const 0) (i32.const 0) (i32.const 1) (i32.const 16)))
    (if (i32.eq (i32.load8_u (i32.const 1043)) (i32.const 100)) ;; 'd'escribe
      (then (call $write (i32.const 1) (i32.const 8192) (i32.const 147)) (return)))
    (drop (memory.grow (i32.const 1)))
    (i32.store8 (i32.const 300) (i32.add (i32.const 48) (global.get $g)))
    (i32.store8 (i32.const 301) (i32.load8_u (i32.const 200)))
    (i32.store8 (i32.const 302) (select (i32.const 48) (i32.const 88) (i32.eqz (i32.load8_u (i32.const 131072)))))
    (i32.store8 (i32.const 303) (i32.add (i32.const 48) (global.get $inits)))
    ;; leave marks for a next call to find, if state leaked
    (global.set $g (i32.const 9))
    (i32.store8 (i32.const 200) (i32.const 90)) ;; 'Z'
    (i32.store8 (i32.const 131072) (i32.const 1))
    (call $write (i32.const 1) (i32.const 12288) (i32.const 35))
    (call $write (i32.const 1) (i32.const 300) (i32.const 4))
    (call $write (i32.const 1) (i32.const 12336) (i32.const 4)))
)
