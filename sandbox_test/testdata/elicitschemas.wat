;; elicitschemas: tool "probe" asks for input with each requestedSchema
;; below in turn and answers one character per attempt: "2" when elicit
;; returned -2 (bad request), "1" for -1 (unsupported), "a" for an answer.
;; The schemas: a cycle through allOf, a property that is a $ref, a nested
;; object, a cycle spelled in capitals, a $ref to an absent subschema, 50
;; levels of not, and last a valid flat schema.
(module
  (import "wasi_snapshot_preview1" "fd_read" (func $fd_read (param i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "fd_write" (func $fd_write (param i32 i32 i32 i32) (result i32)))
  (import "wasmtask_v1" "elicit" (func $elicit (param i32 i32) (result i32)))
  (memory (export "memory") 1)
  (data (i32.const 4096) "{\"abi\":1,\"tools\":[{\"name\":\"probe\",\"description\":\"Asks with hostile schemas.\",\"taskSupport\":\"optional\"}]}\00")
  (data (i32.const 8192) "{\"content\":[{\"type\":\"text\",\"text\":\"\00")
  (data (i32.const 8256) "\"}]}\00")
  (data (i32.const 12288) "{\"message\":\"m\",\"requestedSchema\":{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"}},\"allOf\":[{\"$ref\":\"#\"}]}}\00{\"message\":\"m\",\"requestedSchema\":{\"type\":\"object\",\"properties\":{\"a\":{\"$ref\":\"#\"}}}}\00{\"message\":\"m\",\"requestedSchema\":{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"object\",\"properties\":{\"b\":{\"type\":\"string\"}}}}}}\00{\"message\":\"m\",\"requestedSchema\":{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\",\"ANYOF\":[{\"$REF\":\"#\"}]}}}}\00{\"message\":\"m\",\"requestedSchema\":{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"}},\"$ref\":\"#/additionalProperties\"}}\00{\"message\":\"m\",\"requestedSchema\":{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"}},\"not\":{\"not\":{\"not\":{\"not\":{\"not\":{\"not\":{\"not\":{\"not\":{\"not\":{\"not\":{\"not\":{\"not\":{\"not\":{\"not\":{\"not\":{\"not\":{\"not\":{\"not\":{\"not\":{\"not\":{\"not\":{\"not\":{\"not\":{\"not\":{\"not\":{\"not\":{\"not\":{\"not\":{\"not\":{\"not\":{\"not\":{\"not\":{\"not\":{\"not\":{\"not\":{\"not\":{\"not\":{\"not\":{\"not\":{\"not\":{\"not\":{\"not\":{\"not\":{\"not\":{\"not\":{\"not\":{\"not\":{\"not\":{\"not\":{\"not\":{\"not\":{}}}}}}}}}}}}}}}}}}}}}}}}}}}}}}}}}}}}}}}}}}}}}}}}}}}}}\00{\"message\":\"m\",\"requestedSchema\":{\"type\":\"object\",\"properties\":{\"ok\":{\"type\":\"boolean\"}},\"required\":[\"ok\"]}}\00\00")
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
  (func (export "_start") (local $p i32) (local $n i32) (local $r i32) (local $out i32)
    (if (call $describe) (then (drop (call $puts (i32.const 1) (i32.const 4096))) (return)))
    (local.set $p (i32.const 12288))
    (local.set $out (i32.const 8320))
    (block $done (loop $next
      (local.set $n (call $strlen (local.get $p)))
      (br_if $done (i32.eqz (local.get $n)))
      (local.set $r (call $elicit (local.get $p) (local.get $n)))
      (i32.store8 (local.get $out) (i32.const 97))                                   ;; a
      (if (i32.eq (local.get $r) (i32.const -1)) (then (i32.store8 (local.get $out) (i32.const 49))))  ;; 1
      (if (i32.eq (local.get $r) (i32.const -2)) (then (i32.store8 (local.get $out) (i32.const 50))))  ;; 2
      (local.set $out (i32.add (local.get $out) (i32.const 1)))
      (local.set $p (i32.add (local.get $p) (i32.add (local.get $n) (i32.const 1))))
      (br $next)))
    (drop (call $puts (i32.const 1) (i32.const 8192)))
    (drop (call $write (i32.const 1) (i32.const 8320) (i32.sub (local.get $out) (i32.const 8320))))
    (drop (call $puts (i32.const 1) (i32.const 8256))))
)
