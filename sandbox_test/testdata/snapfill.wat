;; snapfill: a pre-initialised module (it exports _initialize) whose
;; _initialize grows its memory to 60 MiB (960 pages) and fills it with
;; alternating bytes, 00 01 00 01 …: as runs of non-zero bytes that is one
;; data segment per byte, the most a snapshot's encoding could cost per
;; byte of memory. It neither checks memory.grow nor stops: under a memory
;; limit too small for 60 MiB its copies trap. Tool filled answers ok.
;; The size in MiB is the byte after the marker "fill MiB:" (a test may
;; patch it, as it patches the tool's name).
(module
  (import "wasi_snapshot_preview1" "fd_read" (func $fd_read (param i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "fd_write" (func $fd_write (param i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 1)
  (data (i32.const 4096) "{\"abi\":1,\"tools\":[{\"name\":\"filled\",\"description\":\"Answers ok from a full memory.\"}]}\00")
  (data (i32.const 8192) "{\"content\":[{\"type\":\"text\",\"text\":\"ok\"}]}\00")
  (data (i32.const 12288) "fill MiB:\3c")
  (func (export "_initialize") (local $n i32) (local $end i32)
    (local.set $end (i32.shl (i32.load8_u (i32.const 12297)) (i32.const 20)))
    (drop (memory.grow (i32.sub (i32.shr_u (local.get $end) (i32.const 16)) (i32.const 1))))
    ;; [16384, end) doubles a first 8 bytes of the pattern.
    (i64.store (i32.const 16384) (i64.const 0x0100010001000100))
    (local.set $n (i32.const 8))
    (loop $double
      (memory.copy (i32.add (i32.const 16384) (local.get $n)) (i32.const 16384) (local.get $n))
      (local.set $n (i32.shl (local.get $n) (i32.const 1)))
      (br_if $double (i32.le_u (i32.add (i32.const 16384) (i32.shl (local.get $n) (i32.const 1))) (local.get $end))))
    (memory.copy (i32.add (i32.const 16384) (local.get $n)) (i32.const 16384)
      (i32.sub (local.get $end) (i32.add (i32.const 16384) (local.get $n)))))
  (func $strlen (param $p i32) (result i32) (local $n i32)
    (block $d (loop $l
      (br_if $d (i32.eqz (i32.load8_u (i32.add (local.get $p) (local.get $n)))))
      (local.set $n (i32.add (local.get $n) (i32.const 1)))
      (br $l)))
    (local.get $n))
  (func $puts (param $p i32)
    (i32.store (i32.const 0) (local.get $p))
    (i32.store (i32.const 4) (call $strlen (local.get $p)))
    (drop (call $fd_write (i32.const 1) (i32.const 0) (i32.const 1) (i32.const 8))))
  (func (export "_start")
    (i32.store (i32.const 0) (i32.const 1024))
    (i32.store (i32.const 4) (i32.const 2048))
    (drop (call $fd_read (i32.const 0) (i32.const 0) (i32.const 1) (i32.const 8)))
    (if (i32.eq (i32.load8_u (i32.const 1043)) (i32.const 100)) ;; 'd'escribe
      (then (call $puts (i32.const 4096)) (return)))
    (call $puts (i32.const 8192)))
)
