;; import_wasi: imports a function WASI preview1 does not have.
(module
  (import "wasi_snapshot_preview1" "sock_listen" (func (param i32 i32) (result i32)))
  (memory (export "memory") 1)
  (func (export "_start")))
