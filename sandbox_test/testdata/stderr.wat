;; stderr: tool spew writes 16 MiB of log lines to stderr, then a valid result;
;; tool spewtrap writes 4 MiB of them, then traps.
(module
  (import "wasi_snapshot_preview1" "fd_read" (func $fd_read (param i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "fd_write" (func $fd_write (param i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 1)
  (data (i32.const 4096) "{\"abi\":1,\"tools\":[{\"name\":\"spew\"},{\"name\":\"spewtrap\"}]}\00")
  (data (i32.const 8192) "{\"content\":[{\"type\":\"text\",\"text\":\"ok\"}]}\00")
  (data (i32.const 12288) "log line of sixty-three bytes: xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\n")
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
  (func (export "_start") (local $i i32) (local $n i32)
    (if (call $describe) (then (drop (call $puts (i32.const 1) (i32.const 4096))) (return)))
    ;; 64 lines of 64 bytes at 16384
    (loop $c
      (memory.copy (i32.add (i32.const 16384) (i32.shl (local.get $i) (i32.const 6))) (i32.const 12288) (i32.const 64))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br_if $c (i32.lt_u (local.get $i) (i32.const 64))))
    (local.set $n (i32.const 4096)) ;; 4096 x 4 KiB = 16 MiB
    (if (i32.eq (i32.load8_u (i32.const 1061)) (i32.const 116)) (then (local.set $n (i32.const 1024)))) ;; spew"t"rap
    (local.set $i (i32.const 0))
    (loop $w
      (drop (call $write (i32.const 2) (i32.const 16384) (i32.const 4096)))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br_if $w (i32.lt_u (local.get $i) (local.get $n))))
    (if (i32.eq (local.get $n) (i32.const 1024)) (then unreachable))
    (drop (call $puts (i32.const 1) (i32.const 8192))))
)
