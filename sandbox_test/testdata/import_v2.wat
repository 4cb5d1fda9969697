;; import_v2: imports from a future ABI version.
(module
  (import "wasmtask_v2" "log" (func (param i32 i32 i32)))
  (memory (export "memory") 1)
  (func (export "_start")))
