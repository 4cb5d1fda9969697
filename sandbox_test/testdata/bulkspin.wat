;; bulkspin: calls that never end, each one loop around one bulk
;; instruction over all of a 4 MiB memory or a 65,536-entry table. Charged
;; one unit of fuel per instruction, as any instruction, such a loop ran
;; for about a minute between two fuel checks: past its deadline and its
;; cancel, and — native code that never returns to Go — holding up the
;; garbage collector and every other call of the server. Each tool logs
;; "looping" first (so that a test can cancel a running loop), then loops:
;; fill (memory.fill), copy (memory.copy), table (table.fill), tcopy
;; (table.copy). (memory.init is bounded by a data segment, which the
;; module's size bounds; host/internal/wasmrt tests its charge.)
(module
  (import "wasi_snapshot_preview1" "fd_read" (func $fd_read (param i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "fd_write" (func $fd_write (param i32 i32 i32 i32) (result i32)))
  (import "wasmtask_v1" "log" (func $log (param i32 i32 i32)))
  (memory (export "memory") 64)
  (table 65536 funcref)
  (data (i32.const 4096) "{\"abi\":1,\"tools\":[{\"name\":\"fill\",\"description\":\"Fills memory forever.\",\"taskSupport\":\"optional\"},{\"name\":\"copy\",\"description\":\"Copies memory forever.\"},{\"name\":\"table\",\"description\":\"Fills a table forever.\"},{\"name\":\"tcopy\",\"description\":\"Copies a table forever.\"}]}\00")
  (data (i32.const 8192) "looping")
  (func $strlen (param $p i32) (result i32) (local $n i32)
    (block $d (loop $l
      (br_if $d (i32.eqz (i32.load8_u (i32.add (local.get $p) (local.get $n)))))
      (local.set $n (i32.add (local.get $n) (i32.const 1)))
      (br $l)))
    (local.get $n))
  (func $write (param $fd i32) (param $p i32) (param $n i32) (result i32)
    (i32.store (i32.const 0) (local.get $p))
    (i32.store (i32.const 4) (local.get $n))
    (call $fd_write (local.get $fd) (i32.const 0) (i32.const 1) (i32.const 8)))
  (func $puts (param $fd i32) (param $p i32) (result i32)
    (call $write (local.get $fd) (local.get $p) (call $strlen (local.get $p))))
  (func $describe (result i32)
    (i32.store (i32.const 0) (i32.const 1024))
    (i32.store (i32.const 4) (i32.const 2048))
    (drop (call $fd_read (i32.const 0) (i32.const 0) (i32.const 1) (i32.const 8)))
    (i32.eq (i32.load8_u (i32.const 1043)) (i32.const 100)))
  ;; the first letter of the tool's name, and its second
  (func $tool (result i32) (i32.load8_u (i32.const 1057)))
  (func $tool2 (result i32) (i32.load8_u (i32.const 1058)))
  (func (export "_start")
    (if (call $describe) (then (drop (call $puts (i32.const 1) (i32.const 4096))) (return)))
    (call $log (i32.const 1) (i32.const 8192) (i32.const 7))
    (if (i32.eq (call $tool) (i32.const 102)) (then                         ;; fill
      (loop $l (memory.fill (i32.const 0) (i32.const 7) (i32.const 0x400000)) (br $l))))
    (if (i32.eq (call $tool) (i32.const 99)) (then                          ;; copy
      (loop $l (memory.copy (i32.const 0) (i32.const 1) (i32.const 0x3fffff)) (br $l))))
    (if (i32.eq (call $tool2) (i32.const 97)) (then                         ;; table
      (loop $l (table.fill 0 (i32.const 0) (ref.null func) (i32.const 65536)) (br $l))))
    (loop $l (table.copy 0 0 (i32.const 0) (i32.const 1) (i32.const 65535)) (br $l)))   ;; tcopy
)
