;; unicode: a result whose strings are not valid Unicode: lone UTF-16
;; surrogate escapes (a high one alone, a low one alone) in text, in a
;; structuredContent value and in a member name, a valid surrogate pair, and
;; bytes that are not UTF-8 (0xff; 0xed 0xa0 0x80, a surrogate encoded as
;; UTF-8) in a member name and a value.
(module
  (import "wasi_snapshot_preview1" "fd_read" (func $fd_read (param i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "fd_write" (func $fd_write (param i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 1)
  (data (i32.const 4096) "{\"abi\":1,\"tools\":[{\"name\":\"lone\"}]}\00")
  (data (i32.const 8192) "{\"content\":[{\"type\":\"text\",\"text\":\"a\\ud800b\"}],\"structuredContent\":{\"k\\udc00\":\"v\\uD800\",\"pair\":\"\\ud83d\\ude00\",\"raw\ff\":\"\ed\a0\80\"}}\00")
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
  (func $describe (result i32)
    (i32.store (i32.const 0) (i32.const 1024))
    (i32.store (i32.const 4) (i32.const 2048))
    (drop (call $fd_read (i32.const 0) (i32.const 0) (i32.const 1) (i32.const 8)))
    (i32.eq (i32.load8_u (i32.const 1043)) (i32.const 100)))
  (func (export "_start")
    (if (call $describe) (then (call $puts (i32.const 4096)) (return)))
    (call $puts (i32.const 8192)))
)
