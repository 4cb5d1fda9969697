;; import_sig: imports wasmtask_v1.log with the wrong type.
(module
  (import "wasmtask_v1" "log" (func (param i64)))
  (memory (export "memory") 1)
  (func (export "_start")))
