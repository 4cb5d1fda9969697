;; flood: tools that loop over host calls whose work the guest chooses, to
;; check that each call still ends at its deadline or limit and that what
;; reaches the client is bounded. Memory is 8 MiB; from 64 KiB on it is
;; zero, i.e. a vector of ~1M empty iovecs {ptr 0, len 0}.
;;   a_out      fd_write(stdout) of ~1M empty iovecs, forever
;;   b_err      fd_write(stderr) of ~1M empty iovecs, forever
;;   c_log      log of an empty message, forever
;;   d_progress progress 1, 2, 3, … with an empty message, forever
;;   e_status   status with an empty message, forever
;;   f_random   random_get of 8 MiB - 64 KiB, forever
;;   g_lines    fd_write(stderr) of one "\n", forever
(module
  (import "wasi_snapshot_preview1" "fd_read" (func $fd_read (param i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "fd_write" (func $fd_write (param i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "random_get" (func $random_get (param i32 i32) (result i32)))
  (import "wasmtask_v1" "progress" (func $progress (param f64 f64 i32 i32)))
  (import "wasmtask_v1" "status" (func $status (param i32 i32)))
  (import "wasmtask_v1" "log" (func $log (param i32 i32 i32)))
  (memory (export "memory") 128)
  (data (i32.const 4096) "{\"abi\":1,\"tools\":[{\"name\":\"a_out\"},{\"name\":\"b_err\"},{\"name\":\"c_log\"},{\"name\":\"d_progress\"},{\"name\":\"e_status\"},{\"name\":\"f_random\"},{\"name\":\"g_lines\"}]}")
  (data (i32.const 8192) "\n")
  (global $zeros i32 (i32.const 65536))
  (global $nvec i32 (i32.const 1040384)) ;; (8 MiB - 64 KiB) / 8
  (func $write (param $fd i32) (param $p i32) (param $n i32)
    (i32.store (i32.const 0) (local.get $p))
    (i32.store (i32.const 4) (local.get $n))
    (drop (call $fd_write (local.get $fd) (i32.const 0) (i32.const 1) (i32.const 8))))
  (func (export "_start") (local $t i32) (local $i f64)
    (i32.store (i32.const 0) (i32.const 1024))
    (i32.store (i32.const 4) (i32.const 2048))
    (drop (call $fd_read (i32.const 0) (i32.const 0) (i32.const 1) (i32.const 8)))
    ;; {"abi":1,"method":"d… : byte 19 is the method's first letter
    (if (i32.eq (i32.load8_u (i32.const 1043)) (i32.const 100))
      (then (call $write (i32.const 1) (i32.const 4096) (i32.const 151)) (return)))
    ;; {"abi":1,"method":"call","tool":"X… : byte 33 is the tool's first letter
    (local.set $t (i32.load8_u (i32.const 1057)))
    (loop $forever
      (if (i32.eq (local.get $t) (i32.const 97)) ;; a
        (then (drop (call $fd_write (i32.const 1) (global.get $zeros) (global.get $nvec) (i32.const 16)))))
      (if (i32.eq (local.get $t) (i32.const 98)) ;; b
        (then (drop (call $fd_write (i32.const 2) (global.get $zeros) (global.get $nvec) (i32.const 16)))))
      (if (i32.eq (local.get $t) (i32.const 99)) ;; c
        (then (call $log (i32.const 1) (i32.const 8192) (i32.const 0))))
      (if (i32.eq (local.get $t) (i32.const 100)) ;; d
        (then
          (local.set $i (f64.add (local.get $i) (f64.const 1)))
          (call $progress (local.get $i) (f64.const 0) (i32.const 8192) (i32.const 0))))
      (if (i32.eq (local.get $t) (i32.const 101)) ;; e
        (then (call $status (i32.const 8192) (i32.const 0))))
      (if (i32.eq (local.get $t) (i32.const 102)) ;; f
        (then (drop (call $random_get (global.get $zeros) (i32.const 8323072)))))
      (if (i32.eq (local.get $t) (i32.const 103)) ;; g
        (then (call $write (i32.const 2) (i32.const 8192) (i32.const 1))))
      (br $forever)))
)
