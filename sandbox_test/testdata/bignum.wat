;; bignum: results whose numbers a float64 cannot hold, and some it can.
;; inf: 1e400; huge: an integer of 400 digits; neg: -1e309 in an array;
;; max: the largest float64; tiny: 1e-400 (it rounds to 0, which a float64
;; holds).
(module
  (import "wasi_snapshot_preview1" "fd_read" (func $fd_read (param i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "fd_write" (func $fd_write (param i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 1)
  (data (i32.const 4096) "{\"abi\":1,\"tools\":[{\"name\":\"inf\"},{\"name\":\"huge\"},{\"name\":\"neg\"},{\"name\":\"max\"},{\"name\":\"tiny\"}]}\00")
  (data (i32.const 8192) "{\"content\":[],\"structuredContent\":{\"n\":1e400}}\00")
  (data (i32.const 8448) "{\"content\":[],\"structuredContent\":{\"n\":9999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999}}\00")
  (data (i32.const 9216) "{\"content\":[],\"structuredContent\":{\"a\":[1,-1e309]}}\00")
  (data (i32.const 9472) "{\"content\":[{\"type\":\"text\",\"text\":\"max\"}],\"structuredContent\":{\"n\":1.7976931348623157e308}}\00")
  (data (i32.const 9728) "{\"content\":[{\"type\":\"text\",\"text\":\"tiny\"}],\"structuredContent\":{\"n\":1e-400}}\00")
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
  ;; the first letter of the tool's name
  (func $tool (result i32) (i32.load8_u (i32.const 1057)))
  (func (export "_start") (local $i i32) (local $p i32)
    (if (call $describe) (then (call $puts (i32.const 4096)) (return)))
    (local.set $i (call $tool))
    (local.set $p (i32.const 8192))                                                       ;; inf
    (if (i32.eq (local.get $i) (i32.const 104)) (then (local.set $p (i32.const 8448))))   ;; huge
    (if (i32.eq (local.get $i) (i32.const 110)) (then (local.set $p (i32.const 9216))))   ;; neg
    (if (i32.eq (local.get $i) (i32.const 109)) (then (local.set $p (i32.const 9472))))   ;; max
    (if (i32.eq (local.get $i) (i32.const 116)) (then (local.set $p (i32.const 9728))))   ;; tiny
    (call $puts (local.get $p)))
)
