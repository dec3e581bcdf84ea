;; CRC32C (Castagnoli, reflected polynomial 0x82F63B78) over this module's memory. The bytes in
;; src/io/crc32c-wasm.ts are this text compiled: `bun scripts/crc32c-wasm.ts` writes them again.
;;
;; Memory, filled by src/io/crc32c.ts:
;;       0  T0..T7: the slicing-by-8 tables, 256 i32 each (Tk[b]: byte b followed by k zero bytes)
;;    8192  S0..S3: a CRC state moved over 128 zero bytes, one table per byte of the state
;;   16384  the input, up to 64 KiB a call
;;
;; One slicing-by-8 chain waits on its table loads, each step on the one before. Each 512-byte
;; block is therefore read as four 128-byte quarters side by side, four chains in flight: quarter
;; 0 goes on from the state so far, quarters 1-3 start from 0; as a CRC state is linear in its
;; input, the block's state is then ((q0 moved over 128 zeros) ^ q1 moved ...) ^ q3, each move
;; four lookups in S0..S3. The rest (under 512 bytes) goes eight bytes a step, then a byte a step.
;;
;; The steps are written out, not called: JSC's optimizing tier did not inline a step function
;; (2.7 against 3.3 GB/s under Bun).
(module
  (memory (export "memory") 2)

  ;; The CRC state (not inverted) after the $len bytes at 16384, going on from state $crc.
  (func (export "update") (param $crc i32) (param $len i32) (result i32)
    (local $p i32) (local $end i32) (local $q i32) (local $c1 i32) (local $c2 i32) (local $c3 i32)
    (local $a0 i32) (local $b0 i32) (local $a1 i32) (local $b1 i32) (local $a2 i32) (local $b2 i32) (local $a3 i32) (local $b3 i32)
    (local.set $p (i32.const 16384))
    (local.set $end (i32.add (i32.const 16384) (local.get $len)))
    (block $blocksDone
      (loop $blocks
        ;; A 512-byte block: four chains over its quarters ($crc, $c1, $c2, $c3), 8 bytes a step.
        (br_if $blocksDone (i32.lt_u (i32.sub (local.get $end) (local.get $p)) (i32.const 512)))
        (local.set $c1 (i32.const 0))
        (local.set $c2 (i32.const 0))
        (local.set $c3 (i32.const 0))
        (local.set $q (i32.add (local.get $p) (i32.const 128)))
        (loop $quarter
          (local.set $a0 (i32.xor (local.get $crc) (i32.load (local.get $p))))
          (local.set $b0 (i32.load offset=4 (local.get $p)))
          (local.set $crc (i32.xor
            (i32.xor
              (i32.xor (i32.load offset=3072 (i32.shl (i32.and (local.get $b0) (i32.const 255)) (i32.const 2)))
                (i32.load offset=2048 (i32.and (i32.shr_u (local.get $b0) (i32.const 6)) (i32.const 1020))))
              (i32.xor (i32.load offset=1024 (i32.and (i32.shr_u (local.get $b0) (i32.const 14)) (i32.const 1020)))
                (i32.load (i32.shl (i32.shr_u (local.get $b0) (i32.const 24)) (i32.const 2)))))
            (i32.xor
              (i32.xor (i32.load offset=7168 (i32.shl (i32.and (local.get $a0) (i32.const 255)) (i32.const 2)))
                (i32.load offset=6144 (i32.and (i32.shr_u (local.get $a0) (i32.const 6)) (i32.const 1020))))
              (i32.xor (i32.load offset=5120 (i32.and (i32.shr_u (local.get $a0) (i32.const 14)) (i32.const 1020)))
                (i32.load offset=4096 (i32.shl (i32.shr_u (local.get $a0) (i32.const 24)) (i32.const 2)))))))
          (local.set $a1 (i32.xor (local.get $c1) (i32.load offset=128 (local.get $p))))
          (local.set $b1 (i32.load offset=132 (local.get $p)))
          (local.set $c1 (i32.xor
            (i32.xor
              (i32.xor (i32.load offset=3072 (i32.shl (i32.and (local.get $b1) (i32.const 255)) (i32.const 2)))
                (i32.load offset=2048 (i32.and (i32.shr_u (local.get $b1) (i32.const 6)) (i32.const 1020))))
              (i32.xor (i32.load offset=1024 (i32.and (i32.shr_u (local.get $b1) (i32.const 14)) (i32.const 1020)))
                (i32.load (i32.shl (i32.shr_u (local.get $b1) (i32.const 24)) (i32.const 2)))))
            (i32.xor
              (i32.xor (i32.load offset=7168 (i32.shl (i32.and (local.get $a1) (i32.const 255)) (i32.const 2)))
                (i32.load offset=6144 (i32.and (i32.shr_u (local.get $a1) (i32.const 6)) (i32.const 1020))))
              (i32.xor (i32.load offset=5120 (i32.and (i32.shr_u (local.get $a1) (i32.const 14)) (i32.const 1020)))
                (i32.load offset=4096 (i32.shl (i32.shr_u (local.get $a1) (i32.const 24)) (i32.const 2)))))))
          (local.set $a2 (i32.xor (local.get $c2) (i32.load offset=256 (local.get $p))))
          (local.set $b2 (i32.load offset=260 (local.get $p)))
          (local.set $c2 (i32.xor
            (i32.xor
              (i32.xor (i32.load offset=3072 (i32.shl (i32.and (local.get $b2) (i32.const 255)) (i32.const 2)))
                (i32.load offset=2048 (i32.and (i32.shr_u (local.get $b2) (i32.const 6)) (i32.const 1020))))
              (i32.xor (i32.load offset=1024 (i32.and (i32.shr_u (local.get $b2) (i32.const 14)) (i32.const 1020)))
                (i32.load (i32.shl (i32.shr_u (local.get $b2) (i32.const 24)) (i32.const 2)))))
            (i32.xor
              (i32.xor (i32.load offset=7168 (i32.shl (i32.and (local.get $a2) (i32.const 255)) (i32.const 2)))
                (i32.load offset=6144 (i32.and (i32.shr_u (local.get $a2) (i32.const 6)) (i32.const 1020))))
              (i32.xor (i32.load offset=5120 (i32.and (i32.shr_u (local.get $a2) (i32.const 14)) (i32.const 1020)))
                (i32.load offset=4096 (i32.shl (i32.shr_u (local.get $a2) (i32.const 24)) (i32.const 2)))))))
          (local.set $a3 (i32.xor (local.get $c3) (i32.load offset=384 (local.get $p))))
          (local.set $b3 (i32.load offset=388 (local.get $p)))
          (local.set $c3 (i32.xor
            (i32.xor
              (i32.xor (i32.load offset=3072 (i32.shl (i32.and (local.get $b3) (i32.const 255)) (i32.const 2)))
                (i32.load offset=2048 (i32.and (i32.shr_u (local.get $b3) (i32.const 6)) (i32.const 1020))))
              (i32.xor (i32.load offset=1024 (i32.and (i32.shr_u (local.get $b3) (i32.const 14)) (i32.const 1020)))
                (i32.load (i32.shl (i32.shr_u (local.get $b3) (i32.const 24)) (i32.const 2)))))
            (i32.xor
              (i32.xor (i32.load offset=7168 (i32.shl (i32.and (local.get $a3) (i32.const 255)) (i32.const 2)))
                (i32.load offset=6144 (i32.and (i32.shr_u (local.get $a3) (i32.const 6)) (i32.const 1020))))
              (i32.xor (i32.load offset=5120 (i32.and (i32.shr_u (local.get $a3) (i32.const 14)) (i32.const 1020)))
                (i32.load offset=4096 (i32.shl (i32.shr_u (local.get $a3) (i32.const 24)) (i32.const 2)))))))
          (local.set $p (i32.add (local.get $p) (i32.const 8)))
          (br_if $quarter (i32.lt_u (local.get $p) (local.get $q))))
        ;; The block's state: move and xor in the quarters in order.
        (local.set $crc (i32.xor (local.get $c1) (i32.xor
          (i32.xor (i32.load offset=8192 (i32.shl (i32.and (local.get $crc) (i32.const 255)) (i32.const 2)))
            (i32.load offset=9216 (i32.and (i32.shr_u (local.get $crc) (i32.const 6)) (i32.const 1020))))
          (i32.xor (i32.load offset=10240 (i32.and (i32.shr_u (local.get $crc) (i32.const 14)) (i32.const 1020)))
            (i32.load offset=11264 (i32.shl (i32.shr_u (local.get $crc) (i32.const 24)) (i32.const 2)))))))
        (local.set $crc (i32.xor (local.get $c2) (i32.xor
          (i32.xor (i32.load offset=8192 (i32.shl (i32.and (local.get $crc) (i32.const 255)) (i32.const 2)))
            (i32.load offset=9216 (i32.and (i32.shr_u (local.get $crc) (i32.const 6)) (i32.const 1020))))
          (i32.xor (i32.load offset=10240 (i32.and (i32.shr_u (local.get $crc) (i32.const 14)) (i32.const 1020)))
            (i32.load offset=11264 (i32.shl (i32.shr_u (local.get $crc) (i32.const 24)) (i32.const 2)))))))
        (local.set $crc (i32.xor (local.get $c3) (i32.xor
          (i32.xor (i32.load offset=8192 (i32.shl (i32.and (local.get $crc) (i32.const 255)) (i32.const 2)))
            (i32.load offset=9216 (i32.and (i32.shr_u (local.get $crc) (i32.const 6)) (i32.const 1020))))
          (i32.xor (i32.load offset=10240 (i32.and (i32.shr_u (local.get $crc) (i32.const 14)) (i32.const 1020)))
            (i32.load offset=11264 (i32.shl (i32.shr_u (local.get $crc) (i32.const 24)) (i32.const 2)))))))
        (local.set $p (i32.add (local.get $p) (i32.const 384)))
        (br $blocks)))
    ;; Under 512 bytes left: one chain, 8 bytes a step.
    (block $wordsDone
      (loop $words
        (br_if $wordsDone (i32.lt_u (i32.sub (local.get $end) (local.get $p)) (i32.const 8)))
        (local.set $a0 (i32.xor (local.get $crc) (i32.load (local.get $p))))
        (local.set $b0 (i32.load offset=4 (local.get $p)))
        (local.set $crc (i32.xor
          (i32.xor
            (i32.xor (i32.load offset=3072 (i32.shl (i32.and (local.get $b0) (i32.const 255)) (i32.const 2)))
              (i32.load offset=2048 (i32.and (i32.shr_u (local.get $b0) (i32.const 6)) (i32.const 1020))))
            (i32.xor (i32.load offset=1024 (i32.and (i32.shr_u (local.get $b0) (i32.const 14)) (i32.const 1020)))
              (i32.load (i32.shl (i32.shr_u (local.get $b0) (i32.const 24)) (i32.const 2)))))
          (i32.xor
            (i32.xor (i32.load offset=7168 (i32.shl (i32.and (local.get $a0) (i32.const 255)) (i32.const 2)))
              (i32.load offset=6144 (i32.and (i32.shr_u (local.get $a0) (i32.const 6)) (i32.const 1020))))
            (i32.xor (i32.load offset=5120 (i32.and (i32.shr_u (local.get $a0) (i32.const 14)) (i32.const 1020)))
              (i32.load offset=4096 (i32.shl (i32.shr_u (local.get $a0) (i32.const 24)) (i32.const 2)))))))
        (local.set $p (i32.add (local.get $p) (i32.const 8)))
        (br $words)))
    ;; Under 8 bytes left: a byte a step.
    (block $bytesDone
      (loop $bytes
        (br_if $bytesDone (i32.ge_u (local.get $p) (local.get $end)))
        (local.set $crc (i32.xor
          (i32.load (i32.shl (i32.and (i32.xor (local.get $crc) (i32.load8_u (local.get $p))) (i32.const 255)) (i32.const 2)))
          (i32.shr_u (local.get $crc) (i32.const 8))))
        (local.set $p (i32.add (local.get $p) (i32.const 1)))
        (br $bytes)))
    (local.get $crc)))

