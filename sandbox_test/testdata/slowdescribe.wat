;; slowdescribe: describe never answers; it loops until the host's load
;; limits end it. The module is tiny, so a size-ordered load queue takes it
;; first: it must still delay no other module.
(module
  (import "wasi_snapshot_preview1" "fd_write" (func $fd_write (param i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 1)
  (func (export "_start")
    (loop $l (br $l))))
