;; manyglobals: globals are host memory (about 100 bytes each in wazero),
;; outside linear memory, and a module may define as many as its size
;; allows. The test puts 50000 more globals where the marker line is (WAT
;; has no repetition); tool touch writes the last one and answers ok.
(module
  (import "wasi_snapshot_preview1" "fd_read" (func $fd_read (param i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "fd_write" (func $fd_write (param i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 1)
  ;; @GLOBALS@
  (global $last (mut i64) (i64.const 0))
  (data (i32.const 4096) "{\"abi\":1,\"tools\":[{\"name\":\"touch\",\"description\":\"Writes a global.\"}]}\00")
  (data (i32.const 8192) "{\"content\":[{\"type\":\"text\",\"text\":\"ok\"}]}\00")
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
  (func (export "_start")
    (if (call $describe) (then (drop (call $puts (i32.const 1) (i32.const 4096))) (return)))
    (global.set $last (i64.const 1))
    (drop (call $puts (i32.const 1) (i32.const 8192))))
)
