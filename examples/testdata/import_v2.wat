;; A module of a future ABI: it imports wasmtask_v2. The host must refuse it
;; at load, naming both versions (ABI.md section 9, Versioning).
(module
  (import "wasmtask_v2" "log" (func (param i32 i32 i32)))
  (memory (export "memory") 1)
  (func (export "_start")))
