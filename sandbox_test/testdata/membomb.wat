;; membomb: grows memory one page at a time until memory.grow refuses (-1).
;; Tool grow then answers the number of pages it holds; tool growtrap traps.
(module
  (import "wasi_snapshot_preview1" "fd_read" (func $fd_read (param i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "fd_write" (func $fd_write (param i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 1)
  (data (i32.const 4096) "{\"abi\":1,\"tools\":[{\"name\":\"grow\",\"description\":\"Grows until refused, answers its pages.\"},{\"name\":\"growtrap\",\"description\":\"Grows until refused, then traps.\"}]}\00")
  (data (i32.const 8192) "{\"content\":[{\"type\":\"text\",\"text\":\"\00")
  (data (i32.const 8256) "\"}]}\00")
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
  ;; $putnum writes n in decimal to stdout
  (func $putnum (param $n i32) (local $p i32)
    (local.set $p (i32.const 12300))
    (loop $d
      (local.set $p (i32.sub (local.get $p) (i32.const 1)))
      (i32.store8 (local.get $p) (i32.add (i32.const 48) (i32.rem_u (local.get $n) (i32.const 10))))
      (local.set $n (i32.div_u (local.get $n) (i32.const 10)))
      (br_if $d (local.get $n)))
    (drop (call $write (i32.const 1) (local.get $p) (i32.sub (i32.const 12300) (local.get $p)))))
  (func (export "_start")
    (if (call $describe) (then (drop (call $puts (i32.const 1) (i32.const 4096))) (return)))
    (block $refused (loop $g
      (br_if $refused (i32.eq (memory.grow (i32.const 1)) (i32.const -1)))
      (br $g)))
    (if (i32.ne (i32.load8_u (i32.const 1061)) (i32.const 116)) (then ;; grow, not grow"t"rap
      (drop (call $puts (i32.const 1) (i32.const 8192)))
      (call $putnum (memory.size))
      (drop (call $puts (i32.const 1) (i32.const 8256)))
      (return)))
    unreachable)
)
