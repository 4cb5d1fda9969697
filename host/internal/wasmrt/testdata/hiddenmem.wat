;; Test module for package wasmrt: a command whose linear memory is not
;; exported (and is 65536 pages, 4 GiB, to start). The host must refuse it at
;; load instead of allocating a memory whose size it cannot check first.
(module
  (import "wasi_snapshot_preview1" "proc_exit" (func $proc_exit (param i32)))
  (memory 65536)
  (func (export "_start") (call $proc_exit (i32.const 0))))
