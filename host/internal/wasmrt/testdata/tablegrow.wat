;; Test module for package wasmrt: a table declared without a maximum. The
;; host bounds it at load to its initial size + 65536 entries: growing by
;; 65536 works, growing one more returns -1 (else the tool traps). Without
;; the bound, table.grow could make the host allocate 32 GiB of table.
(module
  (import "wasi_snapshot_preview1" "fd_read" (func $fd_read (param i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "fd_write" (func $fd_write (param i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 1)
  (table $t 4 funcref)
  (data (i32.const 8192) "{\"abi\":1,\"tools\":[{\"name\":\"grow\"}]}")
  (data (i32.const 12288) "{\"content\":[{\"type\":\"text\",\"text\":\"bounded\"}]}")
  (func $write (param $ptr i32) (param $len i32)
    (i32.store (i32.const 0) (local.get $ptr))
    (i32.store (i32.const 4) (local.get $len))
    (drop (call $fd_write (i32.const 1) (i32.const 0) (i32.const 1) (i32.const 16))))
  (func (export "_start")
    (i32.store (i32.const 0) (i32.const 1024))
    (i32.store (i32.const 4) (i32.const 4096))
    (drop (call $fd_read (i32.const 0) (i32.const 0) (i32.const 1) (i32.const 16)))
    ;; byte 19 is the method's first letter: 'd'escribe or 'c'all
    (if (i32.eq (i32.load8_u (i32.const 1043)) (i32.const 100))
      (then (call $write (i32.const 8192) (i32.const 35)) (return)))
    (if (i32.ne (table.grow $t (ref.null func) (i32.const 65537)) (i32.const -1)) (then unreachable))
    (if (i32.ne (table.grow $t (ref.null func) (i32.const 65536)) (i32.const 4)) (then unreachable))
    (if (i32.ne (table.grow $t (ref.null func) (i32.const 1)) (i32.const -1)) (then unreachable))
    (call $write (i32.const 12288) (i32.const 46))))
