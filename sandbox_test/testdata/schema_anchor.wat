;; schema_anchor: an inputSchema that reaches its own $anchor through oneOf and if
;; It only describes itself: the host must refuse it at load.
(module
  (import "wasi_snapshot_preview1" "fd_write" (func $fd_write (param i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 1)
  (data (i32.const 1024) "{\"abi\":1,\"tools\":[{\"name\":\"bad\",\"inputSchema\":{\"type\":\"object\",\"$anchor\":\"top\",\"properties\":{\"a\":{\"type\":\"string\"}},\"oneOf\":[{\"if\":{\"$ref\":\"#top\"}}]}}]}\00")
  (func $strlen (param $p i32) (result i32) (local $n i32)
    (block $d (loop $l
      (br_if $d (i32.eqz (i32.load8_u (i32.add (local.get $p) (local.get $n)))))
      (local.set $n (i32.add (local.get $n) (i32.const 1)))
      (br $l)))
    (local.get $n))
  (func (export "_start")
    (i32.store (i32.const 0) (i32.const 1024))
    (i32.store (i32.const 4) (call $strlen (i32.const 1024)))
    (drop (call $fd_write (i32.const 1) (i32.const 0) (i32.const 1) (i32.const 8))))
)
