;; import_memory: imports its memory instead of exporting one.
(module
  (import "env" "memory" (memory 1))
  (func (export "_start")))
