;; A module whose manifest declares ABI 2 (and imports nothing of wasmtask):
;; the host must refuse it at load, naming both versions.
(module
  (import "wasi_snapshot_preview1" "fd_write" (func $w (param i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 1)
  (data (i32.const 16) "{\"abi\":2,\"tools\":[{\"name\":\"x\"}]}")
  (func (export "_start")
    ;; one iovec at 0: the 32-byte manifest at 16, written to stdout
    (i32.store (i32.const 0) (i32.const 16))
    (i32.store (i32.const 4) (i32.const 32))
    (drop (call $w (i32.const 1) (i32.const 0) (i32.const 1) (i32.const 8)))))
