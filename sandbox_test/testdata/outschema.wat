;; outschema: tools whose outputSchema wants {"count": integer}: wrongtype
;; answers {"count":"many"}, nostructured answers no structuredContent,
;; iserror a tool error without it, and good {"count":3}.
(module
  (import "wasi_snapshot_preview1" "fd_read" (func $fd_read (param i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "fd_write" (func $fd_write (param i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 1)
  (data (i32.const 4096) "{\"abi\":1,\"tools\":[{\"name\":\"wrongtype\",\"outputSchema\":{\"type\":\"object\",\"properties\":{\"count\":{\"type\":\"integer\"}},\"required\":[\"count\"]}},{\"name\":\"nostructured\",\"outputSchema\":{\"type\":\"object\",\"properties\":{\"count\":{\"type\":\"integer\"}},\"required\":[\"count\"]}},{\"name\":\"iserror\",\"outputSchema\":{\"type\":\"object\",\"properties\":{\"count\":{\"type\":\"integer\"}},\"required\":[\"count\"]}},{\"name\":\"good\",\"outputSchema\":{\"type\":\"object\",\"properties\":{\"count\":{\"type\":\"integer\"}},\"required\":[\"count\"]}}]}\00")
  (data (i32.const 8192) "{\"content\":[{\"type\":\"text\",\"text\":\"many\"}],\"structuredContent\":{\"count\":\"many\"}}\00")
  (data (i32.const 8448) "{\"content\":[{\"type\":\"text\",\"text\":\"3\"}]}\00")
  (data (i32.const 8704) "{\"content\":[{\"type\":\"text\",\"text\":\"it failed\"}],\"isError\":true}\00")
  (data (i32.const 8960) "{\"content\":[{\"type\":\"text\",\"text\":\"3\"}],\"structuredContent\":{\"count\":3}}\00")
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
  (func (export "_start") (local $n i32)
    (if (call $describe) (then (drop (call $puts (i32.const 1) (i32.const 4096))) (return)))
    (local.set $n (i32.const 8960))                                                      ;; good
    (if (i32.eq (call $tool) (i32.const 119)) (then (local.set $n (i32.const 8192))))    ;; wrongtype
    (if (i32.eq (call $tool) (i32.const 110)) (then (local.set $n (i32.const 8448))))    ;; nostructured
    (if (i32.eq (call $tool) (i32.const 105)) (then (local.set $n (i32.const 8704))))    ;; iserror
    (drop (call $puts (i32.const 1) (local.get $n))))
)
