;; mixed: an ABI 1.2 module that serves a tool (hello) beside a resource
;; with every display member (mem://logo, a blob), a resource whose read
;; the module answers with "not found" (mem://gone) and a prompt with a
;; required argument (review). Requests are told apart by the method's
;; first letter (byte 19 of the request) and, for a read, by the byte of
;; the URI after "mem://" (byte 38: 'l' or 'g').
(module
  (import "wasi_snapshot_preview1" "fd_read" (func $fd_read (param i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "fd_write" (func $fd_write (param i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 1)
  (data (i32.const 4096) "{\"abi\":1,\"revision\":2,\"name\":\"mixed\",\"tools\":[{\"name\":\"hello\",\"description\":\"Says hello.\"}],\"resources\":[{\"uri\":\"mem://logo\",\"name\":\"logo\",\"title\":\"Logo\",\"description\":\"The logo.\",\"mimeType\":\"image/png\",\"size\":4,\"annotations\":{\"audience\":[\"user\"],\"priority\":0.5},\"cache\":{\"cacheable\":true,\"ttlMs\":1000}},{\"uri\":\"mem://gone\",\"name\":\"gone\"}],\"prompts\":[{\"name\":\"review\",\"title\":\"Review\",\"description\":\"Reviews a file.\",\"arguments\":[{\"name\":\"file\",\"required\":true},{\"name\":\"tone\"}]}]}\00")
  (data (i32.const 6144) "{\"contents\":[{\"uri\":\"mem://logo\",\"mimeType\":\"image/png\",\"blob\":\"iVBORw==\"}]}\00")
  (data (i32.const 6656) "{\"error\":{\"code\":-32002,\"message\":\"gone for good\"}}\00")
  (data (i32.const 7168) "{\"description\":\"Review\",\"messages\":[{\"role\":\"user\",\"content\":{\"type\":\"text\",\"text\":\"Review it.\"}}]}\00")
  (data (i32.const 7680) "{\"content\":[{\"type\":\"text\",\"text\":\"hello\"}]}\00")
  (func $strlen (param $p i32) (result i32) (local $n i32)
    (block $d (loop $l
      (br_if $d (i32.eqz (i32.load8_u (i32.add (local.get $p) (local.get $n)))))
      (local.set $n (i32.add (local.get $n) (i32.const 1)))
      (br $l)))
    (local.get $n))
  (func $puts (param $p i32)
    (i32.store (i32.const 0) (local.get $p))
    (i32.store (i32.const 4) (call $strlen (local.get $p)))
    (drop (call $fd_write (i32.const 1) (i32.const 0) (i32.const 1) (i32.const 8))))
  (func (export "_start") (local $m i32)
    (i32.store (i32.const 0) (i32.const 1024))
    (i32.store (i32.const 4) (i32.const 2048))
    (drop (call $fd_read (i32.const 0) (i32.const 0) (i32.const 1) (i32.const 8)))
    (local.set $m (i32.load8_u (i32.const 1043)))
    (if (i32.eq (local.get $m) (i32.const 100)) ;; 'd'escribe
      (then (call $puts (i32.const 4096)) (return)))
    (if (i32.eq (local.get $m) (i32.const 114)) ;; 'r'ead
      (then
        (if (i32.eq (i32.load8_u (i32.const 1062)) (i32.const 108)) ;; mem://l…
          (then (call $puts (i32.const 6144)) (return)))
        (call $puts (i32.const 6656)) (return)))
    (if (i32.eq (local.get $m) (i32.const 112)) ;; 'p'rompt
      (then (call $puts (i32.const 7168)) (return)))
    (call $puts (i32.const 7680)))
)
