;; spin: a call that never ends: one tight loop, no host call, no allocation.
;; Only the host's timeout or cancel can stop it. Tool loop logs "looping"
;; first, so a test knows the guest runs before it cancels, then does the
;; same.
;; Conventions of the .wat modules of this suite: the request is read to 1024;
;; byte 1043 is the first letter of its method ('d'escribe or 'c'all) and
;; byte 1057 the first letter of the tool name; strings are NUL-terminated
;; data segments written with $puts. Real tools parse the JSON request.
(module
  (import "wasi_snapshot_preview1" "fd_read" (func $fd_read (param i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "fd_write" (func $fd_write (param i32 i32 i32 i32) (result i32)))
  (import "wasmtask_v1" "log" (func $log (param i32 i32 i32)))
  (memory (export "memory") 1)
  (data (i32.const 4096) "{\"abi\":1,\"tools\":[{\"name\":\"spin\",\"description\":\"Loops forever.\",\"taskSupport\":\"optional\"},{\"name\":\"loop\",\"description\":\"Logs, then loops forever.\"}]}\00")
  (data (i32.const 8192) "looping")
  (func $strlen (param $p i32) (result i32) (local $n i32)
    (block $d (loop $l
      (br_if $d (i32.eqz (i32.load8_u (i32.add (local.get $p) (local.get $n)))))
      (local.set $n (i32.add (local.get $n) (i32.const 1)))
      (br $l)))
    (local.get $n))
  (func $write (param $fd i32) (param $p i32) (param $n i32) (result i32)
    (i32.store (i32.const 0) (local.get $p))
    (i32.store (i32.const 4) (local.get $n))
    (call $fd_write (local.get $fd) (i32.const 0) (i32.const 1) (i32.const 8)))
  (func $puts (param $fd i32) (param $p i32) (result i32)
    (call $write (local.get $fd) (local.get $p) (call $strlen (local.get $p))))
  (func $describe (result i32)
    (i32.store (i32.const 0) (i32.const 1024))
    (i32.store (i32.const 4) (i32.const 2048))
    (drop (call $fd_read (i32.const 0) (i32.const 0) (i32.const 1) (i32.const 8)))
    (i32.eq (i32.load8_u (i32.const 1043)) (i32.const 100)))
  ;; the first letter of the tool's name
  (func $tool (result i32) (i32.load8_u (i32.const 1057)))
  (func (export "_start")
    (if (call $describe) (then (drop (call $puts (i32.const 1) (i32.const 4096))) (return)))
    (if (i32.eq (call $tool) (i32.const 108)) (then (call $log (i32.const 1) (i32.const 8192) (i32.const 7))))
    (loop $forever (br $forever)))
)
