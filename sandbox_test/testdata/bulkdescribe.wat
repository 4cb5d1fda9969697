;; bulkdescribe: describe never answers; it loops around a memory.fill of
;; all of its 4 MiB memory until the host's load limits end it (charged one
;; unit of fuel per instruction, it ran for tens of seconds past them).
(module
  (memory (export "memory") 64)
  (func (export "_start")
    (loop $l (memory.fill (i32.const 0) (i32.const 7) (i32.const 0x400000)) (br $l))))
