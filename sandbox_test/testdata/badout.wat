;; badout: tools that exit 0 with output that is not an ABI result: notjson,
;; shape (content is not an array), nocontent, two (two documents), empty, kind
;; (unknown content type), structured (structuredContent not an object).
(module
  (import "wasi_snapshot_preview1" "fd_read" (func $fd_read (param i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "fd_write" (func $fd_write (param i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 1)
  (data (i32.const 4096) "{\"abi\":1,\"tools\":[{\"name\":\"notjson\"},{\"name\":\"shape\"},{\"name\":\"nocontent\"},{\"name\":\"two\"},{\"name\":\"empty\"},{\"name\":\"kind\"},{\"name\":\"structured\"}]}\00")
  (data (i32.const 8192) "this is not json\00")
  (data (i32.const 8448) "{\"content\":\"text\"}\00")
  (data (i32.const 8704) "{\"result\":{\"answer\":42}}\00")
  (data (i32.const 8960) "{\"content\":[]}{\"content\":[]}\00")
  (data (i32.const 9216) "\00")
  (data (i32.const 9472) "{\"content\":[{\"type\":\"exec\",\"text\":\"rm -rf /\"}]}\00")
  (data (i32.const 9728) "{\"content\":[],\"structuredContent\":[1,2]}\00")
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
    (local.set $i (call $tool))
    (local.set $n (i32.const 9728))                                            ;; structured
    (if (i32.eq (local.get $i) (i32.const 110)) (then (local.set $n (i32.const 8192))))  ;; notjson / nocontent
    (if (i32.eq (i32.load8_u (i32.const 1059)) (i32.const 99)) (then (local.set $n (i32.const 8704)))) ;; no"c"ontent
    (if (i32.eq (local.get $i) (i32.const 115)) (then                          ;; shape / structured
      (if (i32.eq (i32.load8_u (i32.const 1058)) (i32.const 104)) (then (local.set $n (i32.const 8448))))))
    (if (i32.eq (local.get $i) (i32.const 116)) (then (local.set $n (i32.const 8960))))  ;; two
    (if (i32.eq (local.get $i) (i32.const 101)) (then (local.set $n (i32.const 9216))))  ;; empty
    (if (i32.eq (local.get $i) (i32.const 107)) (then (local.set $n (i32.const 9472))))  ;; kind
    (drop (call $puts (i32.const 1) (local.get $n))))
)
