;; spare_prompt: a module of one prompt (spare_prompt) and nothing else.
;; run.sh builds it, and add.wat from examples/wat, into the fixture's
;; spare directory; the diagnostic tools test_trigger_prompt_change and
;; test_trigger_tool_change move them into the served tool directory and
;; out again, so the suite sees the prompt list and the tool list change.
;; A request is told apart by the method's first letter (byte 19 of the
;; request): 'd'escribe gets the manifest, anything else the prompt.
(module
  (import "wasi_snapshot_preview1" "fd_read" (func $fd_read (param i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "fd_write" (func $fd_write (param i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 1)
  (data (i32.const 4096) "{\"abi\":1,\"revision\":2,\"name\":\"spare_prompt\",\"tools\":[],\"prompts\":[{\"name\":\"spare_prompt\",\"description\":\"A prompt that comes and goes with its module.\"}]}\00")
  (data (i32.const 6144) "{\"messages\":[{\"role\":\"user\",\"content\":{\"type\":\"text\",\"text\":\"A spare prompt.\"}}]}\00")
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
  (func (export "_start")
    (i32.store (i32.const 0) (i32.const 1024))
    (i32.store (i32.const 4) (i32.const 2048))
    (drop (call $fd_read (i32.const 0) (i32.const 0) (i32.const 1) (i32.const 8)))
    (if (i32.eq (i32.load8_u (i32.const 1043)) (i32.const 100)) ;; 'd'escribe
      (then (call $puts (i32.const 4096)) (return)))
    (call $puts (i32.const 6144)))
)
