;; Test module for package wasmrt: a WASI command speaking ABI v1.
;; Layout: stdin is read to 1024; the request's method starts at byte 19
;; and, for a call, the tool name at byte 33 (the host marshals
;; {"abi":1,"method":…,"tool":…} in that field order). Real tools parse JSON.
;; Tools hello, ask (elicit; counts in its memory), progress.
(module
  (import "wasi_snapshot_preview1" "fd_read" (func $fd_read (param i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "fd_write" (func $fd_write (param i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "proc_exit" (func $proc_exit (param i32)))
  (import "wasmtask_v1" "progress" (func $progress (param f64 f64 i32 i32)))
  (import "wasmtask_v1" "status" (func $status (param i32 i32)))
  (import "wasmtask_v1" "log" (func $log (param i32 i32 i32)))
  (import "wasmtask_v1" "elicit" (func $elicit (param i32 i32) (result i32)))
  (import "wasmtask_v1" "reply" (func $reply (param i32 i32) (result i32)))
  (memory (export "memory") 1)
  (data (i32.const 8192) "{\"abi\":1,\"name\":\"test\",\"tools\":[{\"name\":\"hello\",\"description\":\"Says hello.\",\"inputSchema\":{\"type\":\"object\",\"properties\":{\"who\":{\"type\":\"string\"}}},\"cache\":{\"cacheable\":true,\"ttlMs\":60000}},{\"name\":\"ask\",\"description\":\"Asks the user; reports its instance state.\",\"taskSupport\":\"optional\"},{\"name\":\"progress\",\"description\":\"Reports progress, status and logs.\",\"grants\":{\"env\":[\"HOME\"],\"dirs\":[{\"guestPath\":\"/data\"}]}}]}")
  (data (i32.const 12288) "{\"content\":[{\"type\":\"text\",\"text\":\"hello\"}]}")
  (data (i32.const 16384) "halfstatuswhystderr\n")
  (data (i32.const 16404) "{\"message\":\"name?\",\"requestedSchema\":{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\"}}}}")
  (data (i32.const 16640) "{\"content\":[{\"type\":\"text\",\"text\":\"")
  (data (i32.const 16680) "\"}],\"structuredContent\":")
  (data (i32.const 16710) "}")
  ;; write len bytes at ptr to fd; returns the errno
  (func $write (param $fd i32) (param $ptr i32) (param $len i32) (result i32)
    (i32.store (i32.const 0) (local.get $ptr))
    (i32.store (i32.const 4) (local.get $len))
    (call $fd_write (local.get $fd) (i32.const 0) (i32.const 1) (i32.const 16)))
  ;; read all of stdin to 1024 (at most 4096 bytes)
  (func $read_all (local $off i32)
    (local.set $off (i32.const 1024))
    (block $done (loop $more
      (i32.store (i32.const 0) (local.get $off))
      (i32.store (i32.const 4) (i32.sub (i32.const 5120) (local.get $off)))
      (br_if $done (call $fd_read (i32.const 0) (i32.const 0) (i32.const 1) (i32.const 16)))
      (br_if $done (i32.eqz (i32.load (i32.const 16))))
      (local.set $off (i32.add (local.get $off) (i32.load (i32.const 16))))
      (br_if $done (i32.ge_u (local.get $off) (i32.const 5120)))
      (br $more))))
  (func $tool (result i32) (i32.load8_u (i32.const 1057)))
  (func $run
    (local $n i32)
    (if (i32.eq (call $tool) (i32.const 104)) ;; 'h'ello
      (then (drop (call $write (i32.const 1) (i32.const 12288) (i32.const 44))) (return)))
    (if (i32.eq (call $tool) (i32.const 112)) ;; 'p'rogress
      (then
        (call $progress (f64.const 1) (f64.const 2) (i32.const 16384) (i32.const 4))
        (call $status (i32.const 16388) (i32.const 6))
        (call $log (i32.const 2) (i32.const 16394) (i32.const 3))
        (drop (call $write (i32.const 2) (i32.const 16397) (i32.const 7)))
        (drop (call $write (i32.const 1) (i32.const 12288) (i32.const 44)))
        (return)))
    ;; 'a'sk: counter += 1; elicit; counter += 1; answer {"content":[{"type":"text","text":"<counter>"}],"structuredContent":<reply>}
    (i32.store (i32.const 100) (i32.add (i32.load (i32.const 100)) (i32.const 1)))
    (local.set $n (call $elicit (i32.const 16404) (i32.const 95)))
    ;; a negative code c exits 6-c: -1 → 7, -2 → 8, -3 → 9
    (if (i32.lt_s (local.get $n) (i32.const 0)) (then (call $proc_exit (i32.sub (i32.const 6) (local.get $n)))))
    (i32.store (i32.const 100) (i32.add (i32.load (i32.const 100)) (i32.const 1)))
    (drop (call $reply (i32.const 20480) (local.get $n)))
    (drop (call $write (i32.const 1) (i32.const 16640) (i32.const 35)))
    (i32.store8 (i32.const 104) (i32.add (i32.const 48) (i32.load (i32.const 100))))
    (drop (call $write (i32.const 1) (i32.const 104) (i32.const 1)))
    (drop (call $write (i32.const 1) (i32.const 16680) (i32.const 24)))
    (drop (call $write (i32.const 1) (i32.const 20480) (local.get $n)))
    (drop (call $write (i32.const 1) (i32.const 16710) (i32.const 1))))
  (func (export "_start")
    (call $read_all)
    (if (i32.eq (i32.load8_u (i32.const 1043)) (i32.const 100)) ;; 'd'escribe
      (then (drop (call $write (i32.const 1) (i32.const 8192) (i32.const 417))) (return)))
    (call $run))
)
