;; import_foreign: imports from a module the host does not provide.
(module
  (import "env" "system" (func (param i32) (result i32)))
  (memory (export "memory") 1)
  (func (export "_start")))
