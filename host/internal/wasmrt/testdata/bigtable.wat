;; Test module for package wasmrt: a table that starts with 2^27 entries
;; (1 GiB of host pointers). Refused at load.
(module
  (import "wasi_snapshot_preview1" "proc_exit" (func $proc_exit (param i32)))
  (memory (export "memory") 1)
  (table 134217728 funcref)
  (func (export "_start") (call $proc_exit (i32.const 0))))
