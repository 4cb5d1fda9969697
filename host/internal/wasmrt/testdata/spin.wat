;; Test module for package wasmrt: guests that never end unless the host
;; stops them. Tool "loop" spins in the tightest loop, "calls" runs a call
;; tree with no loop at all (f(n) calls f(n-1) twice from n = 62), "grow"
;; spins calling memory.grow 0 (after which the host reloads globals);
;; "fill", "memcopy" and "tablefill" spin around one bulk instruction
;; over 4 MiB of memory or 65,536 table entries, which the host charges by
;; their length (bulk.go).
(module
  (import "wasi_snapshot_preview1" "fd_read" (func $fd_read (param i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "fd_write" (func $fd_write (param i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 1)
  (table 65536 funcref)
  (data (i32.const 4096) "{\"abi\":1,\"tools\":[{\"name\":\"loop\"},{\"name\":\"calls\"},{\"name\":\"grow\"},{\"name\":\"fill\"},{\"name\":\"memcopy\"},{\"name\":\"tablefill\"}]}\00")
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
  (func $describe (result i32)
    (i32.store (i32.const 0) (i32.const 1024))
    (i32.store (i32.const 4) (i32.const 2048))
    (drop (call $fd_read (i32.const 0) (i32.const 0) (i32.const 1) (i32.const 8)))
    (i32.eq (i32.load8_u (i32.const 1043)) (i32.const 100)))
  ;; the first letter of the tool's name
  (func $tool (result i32) (i32.load8_u (i32.const 1057)))
  (func $f (param $n i32) (result i64)
    (if (result i64) (i32.eqz (local.get $n))
      (then (i64.const 1))
      (else (i64.add (call $f (i32.sub (local.get $n) (i32.const 1)))
                     (call $f (i32.sub (local.get $n) (i32.const 1)))))))
  (func $spin (loop $l (br $l)))
  (func $grow (loop $l (drop (memory.grow (i32.const 0))) (br $l)))
  (func $fill
    (drop (memory.grow (i32.const 63)))
    (loop $l (memory.fill (i32.const 0) (i32.const 7) (i32.shl (memory.size) (i32.const 16))) (br $l)))
  (func $memcopy
    (drop (memory.grow (i32.const 63)))
    (loop $l (memory.copy (i32.const 0) (i32.const 1) (i32.sub (i32.shl (memory.size) (i32.const 16)) (i32.const 1))) (br $l)))
  (func $tablefill
    (loop $l (table.fill 0 (i32.const 0) (ref.null func) (table.size 0)) (br $l)))
  (func (export "_start")
    (if (call $describe) (then
      (drop (call $write (i32.const 1) (i32.const 4096) (call $strlen (i32.const 4096))))
      (return)))
    (if (i32.eq (call $tool) (i32.const 108)) (then (call $spin)))              ;; l
    (if (i32.eq (call $tool) (i32.const 99)) (then (drop (call $f (i32.const 62))))) ;; c
    (if (i32.eq (call $tool) (i32.const 103)) (then (call $grow)))              ;; g
    (if (i32.eq (call $tool) (i32.const 102)) (then (call $fill)))              ;; f
    (if (i32.eq (call $tool) (i32.const 109)) (then (call $memcopy)))           ;; m
    (if (i32.eq (call $tool) (i32.const 116)) (then (call $tablefill))))        ;; t
)
