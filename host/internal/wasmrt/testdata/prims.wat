;; Test module for package wasmrt: ABI 1.2 primitives. It declares a
;; tool (hello), a resource, a template and a prompt, and answers read
;; (byte 19 'r'), prompt ('p'), call (byte 20 'a') and complete ('c') with
;; fixed documents; a read of a URI whose
;; 35th byte is 'x' (test://items/x…) gets an invalid answer.
(module
  (import "wasi_snapshot_preview1" "fd_read" (func $fd_read (param i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "fd_write" (func $fd_write (param i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 1)
  (data (i32.const 8192) "{\"abi\":1,\"revision\":2,\"name\":\"prims\",\"tools\":[{\"name\":\"hello\",\"inputSchema\":{\"type\":\"object\"}}],\"resources\":[{\"uri\":\"test://static\",\"name\":\"static\",\"mimeType\":\"text/plain\"}],\"resourceTemplates\":[{\"uriTemplate\":\"test://items/{id}\",\"name\":\"item\",\"complete\":[\"id\"]}],\"prompts\":[{\"name\":\"greet\",\"arguments\":[{\"name\":\"who\",\"complete\":true}]}]}")
  (data (i32.const 12288) "{\"contents\":[{\"uri\":\"test://static\",\"text\":\"static\"}]}")
  (data (i32.const 12800) "{\"messages\":[{\"role\":\"user\",\"content\":{\"type\":\"text\",\"text\":\"hi\"}}]}")
  (data (i32.const 13312) "{\"values\":[\"one\",\"two\"],\"total\":2}")
  (data (i32.const 14336) "{\"content\":[{\"type\":\"text\",\"text\":\"hello\"}]}")
  (data (i32.const 13824) "{\"contents\":[{\"uri\":\"no scheme\",\"text\":\"x\"}]}")
  (func $write (param $ptr i32) (param $len i32)
    (i32.store (i32.const 0) (local.get $ptr))
    (i32.store (i32.const 4) (local.get $len))
    (drop (call $fd_write (i32.const 1) (i32.const 0) (i32.const 1) (i32.const 16))))
  (func $read_all (local $off i32)
    (local.set $off (i32.const 1024))
    (block $done (loop $more
      (i32.store (i32.const 0) (local.get $off))
      (i32.store (i32.const 4) (i32.sub (i32.const 5120) (local.get $off)))
      (br_if $done (call $fd_read (i32.const 0) (i32.const 0) (i32.const 1) (i32.const 16)))
      (br_if $done (i32.eqz (i32.load (i32.const 16))))
      (local.set $off (i32.add (local.get $off) (i32.load (i32.const 16))))
      (br_if $done (i32.ge_u (local.get $off) (i32.const 5120)))
      (br $more))))
  (func (export "_start") (local $m i32)
    (call $read_all)
    (local.set $m (i32.load8_u (i32.const 1043)))
    (if (i32.eq (local.get $m) (i32.const 100)) ;; 'd'escribe
      (then (call $write (i32.const 8192) (i32.const 338)) (return)))
    (if (i32.eq (local.get $m) (i32.const 114)) ;; 'r'ead
      (then
        (if (i32.eq (i32.load8_u (i32.const 1069)) (i32.const 120)) ;; uri test://items/x
          (then (call $write (i32.const 13824) (i32.const 45)) (return)))
        (call $write (i32.const 12288) (i32.const 54)) (return)))
    (if (i32.eq (i32.load8_u (i32.const 1044)) (i32.const 97)) ;; c'a'll (of hello)
      (then (call $write (i32.const 14336) (i32.const 44)) (return)))
    (if (i32.eq (local.get $m) (i32.const 112)) ;; 'p'rompt
      (then (call $write (i32.const 12800) (i32.const 68)) (return)))
    (call $write (i32.const 13312) (i32.const 34))))
