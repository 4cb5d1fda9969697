;; import_unknown: imports a wasmtask_v1 function the ABI does not define.
(module
  (import "wasmtask_v1" "exec" (func (param i32 i32) (result i32)))
  (memory (export "memory") 1)
  (func (export "_start")))
