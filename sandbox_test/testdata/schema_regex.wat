;; schema_regex: an inputSchema whose 30 patterns compile to 30 000 instructions
;; It only describes itself: the host must refuse it at load.
(module
  (import "wasi_snapshot_preview1" "fd_write" (func $fd_write (param i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 1)
  (data (i32.const 1024) "{\"abi\":1,\"tools\":[{\"name\":\"bad\",\"inputSchema\":{\"type\":\"object\",\"properties\":{\"p0\":{\"type\":\"string\",\"pattern\":\"[a-z]{1000}\"},\"p1\":{\"type\":\"string\",\"pattern\":\"[a-z]{1000}\"},\"p2\":{\"type\":\"string\",\"pattern\":\"[a-z]{1000}\"},\"p3\":{\"type\":\"string\",\"pattern\":\"[a-z]{1000}\"},\"p4\":{\"type\":\"string\",\"pattern\":\"[a-z]{1000}\"},\"p5\":{\"type\":\"string\",\"pattern\":\"[a-z]{1000}\"},\"p6\":{\"type\":\"string\",\"pattern\":\"[a-z]{1000}\"},\"p7\":{\"type\":\"string\",\"pattern\":\"[a-z]{1000}\"},\"p8\":{\"type\":\"string\",\"pattern\":\"[a-z]{1000}\"},\"p9\":{\"type\":\"string\",\"pattern\":\"[a-z]{1000}\"},\"p10\":{\"type\":\"string\",\"pattern\":\"[a-z]{1000}\"},\"p11\":{\"type\":\"string\",\"pattern\":\"[a-z]{1000}\"},\"p12\":{\"type\":\"string\",\"pattern\":\"[a-z]{1000}\"},\"p13\":{\"type\":\"string\",\"pattern\":\"[a-z]{1000}\"},\"p14\":{\"type\":\"string\",\"pattern\":\"[a-z]{1000}\"},\"p15\":{\"type\":\"string\",\"pattern\":\"[a-z]{1000}\"},\"p16\":{\"type\":\"string\",\"pattern\":\"[a-z]{1000}\"},\"p17\":{\"type\":\"string\",\"pattern\":\"[a-z]{1000}\"},\"p18\":{\"type\":\"string\",\"pattern\":\"[a-z]{1000}\"},\"p19\":{\"type\":\"string\",\"pattern\":\"[a-z]{1000}\"},\"p20\":{\"type\":\"string\",\"pattern\":\"[a-z]{1000}\"},\"p21\":{\"type\":\"string\",\"pattern\":\"[a-z]{1000}\"},\"p22\":{\"type\":\"string\",\"pattern\":\"[a-z]{1000}\"},\"p23\":{\"type\":\"string\",\"pattern\":\"[a-z]{1000}\"},\"p24\":{\"type\":\"string\",\"pattern\":\"[a-z]{1000}\"},\"p25\":{\"type\":\"string\",\"pattern\":\"[a-z]{1000}\"},\"p26\":{\"type\":\"string\",\"pattern\":\"[a-z]{1000}\"},\"p27\":{\"type\":\"string\",\"pattern\":\"[a-z]{1000}\"},\"p28\":{\"type\":\"string\",\"pattern\":\"[a-z]{1000}\"},\"p29\":{\"type\":\"string\",\"pattern\":\"[a-z]{1000}\"}}}}]}\00")
  (func $strlen (param $p i32) (result i32) (local $n i32)
    (block $d (loop $l
      (br_if $d (i32.eqz (i32.load8_u (i32.add (local.get $p) (local.get $n)))))
      (local.set $n (i32.add (local.get $n) (i32.const 1)))
      (br $l)))
    (local.get $n))
  (func (export "_start")
    (i32.store (i32.const 0) (i32.const 1024))
    (i32.store (i32.const 4) (call $strlen (i32.const 1024)))
    (drop (call $fd_write (i32.const 1) (i32.const 0) (i32.const 1) (i32.const 8))))
)
