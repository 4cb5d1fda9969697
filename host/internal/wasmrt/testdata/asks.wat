;; Test module for package wasmrt: ABI 1.2's sample and roots. Tool
;; "sample" samples a fixed request, tool "roots" lists the roots; each
;; answers the client's result as its structuredContent, or the text
;; "refused" when the host answered a negative code. Tool "all" asks an
;; elicitation, a keyed sampling question and a roots question at once
;; (elicit_all) and answers the replies' array. The tool name starts
;; at byte 33 of the request (read to 1024), as in ok.wat.
(module
  (import "wasi_snapshot_preview1" "fd_read" (func $fd_read (param i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "fd_write" (func $fd_write (param i32 i32 i32 i32) (result i32)))
  (import "wasmtask_v1" "sample" (func $sample (param i32 i32) (result i32)))
  (import "wasmtask_v1" "roots" (func $roots (result i32)))
  (import "wasmtask_v1" "reply" (func $reply (param i32 i32) (result i32)))
  (import "wasmtask_v1" "elicit_all" (func $elicit_all (param i32 i32) (result i32)))
  (memory (export "memory") 2)
  (data (i32.const 8192) "{\"abi\":1,\"revision\":2,\"name\":\"asks\",\"tools\":[{\"name\":\"sample\",\"inputSchema\":{\"type\":\"object\"}},{\"name\":\"roots\",\"inputSchema\":{\"type\":\"object\"}},{\"name\":\"all\",\"inputSchema\":{\"type\":\"object\"}}]}")
  (data (i32.const 12288) "{\"messages\":[{\"role\":\"user\",\"content\":{\"type\":\"text\",\"text\":\"2+2?\"}}],\"maxTokens\":5}")
  (data (i32.const 14336) "[{\"key\":\"who\",\"message\":\"Name?\",\"requestedSchema\":{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\"}}}},{\"key\":\"model\",\"method\":\"sampling/createMessage\",\"params\":{\"messages\":[{\"role\":\"user\",\"content\":{\"type\":\"text\",\"text\":\"hi\"}}],\"maxTokens\":5}},{\"method\":\"roots/list\"}]")
  (data (i32.const 12800) "{\"content\":[{\"type\":\"text\",\"text\":\"refused\"}]}")
  (data (i32.const 13312) "{\"content\":[],\"structuredContent\":")
  (data (i32.const 13400) "}")
  (data (i32.const 13440) "{\"content\":[],\"structuredContent\":{\"r\":")
  (data (i32.const 13500) "}}")
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
  (func (export "_start") (local $n i32)
    (call $read_all)
    (if (i32.eq (i32.load8_u (i32.const 1043)) (i32.const 100)) ;; 'd'escribe
      (then (call $write (i32.const 8192) (i32.const 192)) (return)))
    (if (i32.eq (i32.load8_u (i32.const 1057)) (i32.const 115)) ;; 's'ample
      (then (local.set $n (call $sample (i32.const 12288) (i32.const 84))))
      (else (if (i32.eq (i32.load8_u (i32.const 1057)) (i32.const 97)) ;; 'a'll
        (then (local.set $n (call $elicit_all (i32.const 14336) (i32.const 275))))
        (else (local.set $n (call $roots))))))
    (if (i32.lt_s (local.get $n) (i32.const 0))
      (then (call $write (i32.const 12800) (i32.const 46)) (return)))
    (drop (call $reply (i32.const 20000) (i32.const 40000)))
    (if (i32.eq (i32.load8_u (i32.const 1057)) (i32.const 97)) ;; 'a'll: {"r": replies}
      (then
        (call $write (i32.const 13440) (i32.const 39))
        (call $write (i32.const 20000) (local.get $n))
        (call $write (i32.const 13500) (i32.const 2))
        (return)))
    (call $write (i32.const 13312) (i32.const 34))
    (call $write (i32.const 20000) (local.get $n))
    (call $write (i32.const 13400) (i32.const 1))))
