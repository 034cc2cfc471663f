;; The embedded index's two loops that JavaScript runs too slowly, compiled by `npm run wasm:kernels`.
;;
;; `scan` (sketch.ts): the Hamming distance of every admitted code to the query, with a histogram of
;; the distances, so the caller picks the nearest by counting. Codes are `words` 64-bit words each, side by
;; side from `codes`; `mask` holds a byte per code (1: the searcher may read it); `dist` receives a 16-bit
;; distance per code (admitted ones only); `hist` counts admitted codes per distance (32-bit counters, zeroed
;; by the caller).
(module
  (import "env" "memory" (memory 1))
  (func (export "scan") (param $codes i32) (param $count i32) (param $words i32) (param $query i32) (param $mask i32) (param $dist i32) (param $hist i32)
    (local $slot i32) (local $word i32) (local $code i32) (local $q i32) (local $d i64) (local $at i32)
    (block $slots_done
      (loop $slots
        (br_if $slots_done (i32.ge_u (local.get $slot) (local.get $count)))
        (if (i32.load8_u (i32.add (local.get $mask) (local.get $slot)))
          (then
            (local.set $code (i32.add (local.get $codes) (i32.mul (local.get $slot) (i32.shl (local.get $words) (i32.const 3)))))
            (local.set $q (local.get $query))
            (local.set $word (i32.const 0))
            (local.set $d (i64.const 0))
            (block $words_done
              (loop $each_word
                (br_if $words_done (i32.ge_u (local.get $word) (local.get $words)))
                (local.set $d (i64.add (local.get $d) (i64.popcnt (i64.xor (i64.load (local.get $code)) (i64.load (local.get $q))))))
                (local.set $code (i32.add (local.get $code) (i32.const 8)))
                (local.set $q (i32.add (local.get $q) (i32.const 8)))
                (local.set $word (i32.add (local.get $word) (i32.const 1)))
                (br $each_word)))
            (i32.store16 (i32.add (local.get $dist) (i32.shl (local.get $slot) (i32.const 1))) (i32.wrap_i64 (local.get $d)))
            (local.set $at (i32.add (local.get $hist) (i32.shl (i32.wrap_i64 (local.get $d)) (i32.const 2))))
            (i32.store (local.get $at) (i32.add (i32.load (local.get $at)) (i32.const 1)))))
        (local.set $slot (i32.add (local.get $slot) (i32.const 1)))
        (br $slots))))

  ;; `dots` (sqlite-vector-index.ts, re-scoring): for each of `count` vectors of `lanes` groups of four f32,
  ;; side by side from `vectors`, its dot product with the query's and its squared norm, as two f32 at `out`.
  (func (export "dots") (param $vectors i32) (param $count i32) (param $lanes i32) (param $query i32) (param $out i32)
    (local $i i32) (local $k i32) (local $v i32) (local $q i32) (local $dot v128) (local $norm v128) (local $x v128)
    (local.set $v (local.get $vectors))
    (block $vectors_done
      (loop $each_vector
        (br_if $vectors_done (i32.ge_u (local.get $i) (local.get $count)))
        (local.set $dot (v128.const f32x4 0 0 0 0))
        (local.set $norm (v128.const f32x4 0 0 0 0))
        (local.set $q (local.get $query))
        (local.set $k (i32.const 0))
        (block $lanes_done
          (loop $each_lane
            (br_if $lanes_done (i32.ge_u (local.get $k) (local.get $lanes)))
            (local.set $x (v128.load (local.get $v)))
            (local.set $dot (f32x4.add (local.get $dot) (f32x4.mul (local.get $x) (v128.load (local.get $q)))))
            (local.set $norm (f32x4.add (local.get $norm) (f32x4.mul (local.get $x) (local.get $x))))
            (local.set $v (i32.add (local.get $v) (i32.const 16)))
            (local.set $q (i32.add (local.get $q) (i32.const 16)))
            (local.set $k (i32.add (local.get $k) (i32.const 1)))
            (br $each_lane)))
        (f32.store (local.get $out)
          (f32.add (f32.add (f32x4.extract_lane 0 (local.get $dot)) (f32x4.extract_lane 1 (local.get $dot)))
                   (f32.add (f32x4.extract_lane 2 (local.get $dot)) (f32x4.extract_lane 3 (local.get $dot)))))
        (f32.store offset=4 (local.get $out)
          (f32.add (f32.add (f32x4.extract_lane 0 (local.get $norm)) (f32x4.extract_lane 1 (local.get $norm)))
                   (f32.add (f32x4.extract_lane 2 (local.get $norm)) (f32x4.extract_lane 3 (local.get $norm)))))
        (local.set $out (i32.add (local.get $out) (i32.const 8)))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $each_vector))))

  ;; `admit` (sketch.ts): mask[s] = 1 where slot s is live, its access key is allowed (a byte per key at
  ;; `allowed`) and it expires after `now`; answers how many are admitted.
  (func (export "admit") (param $live i32) (param $access i32) (param $expires i32) (param $allowed i32) (param $now f64) (param $count i32) (param $mask i32) (result i32)
    (local $s i32) (local $m i32) (local $n i32)
    (block $done
      (loop $each
        (br_if $done (i32.ge_u (local.get $s) (local.get $count)))
        (local.set $m
          (i32.and
            (i32.and
              (i32.load8_u (i32.add (local.get $live) (local.get $s)))
              (i32.load8_u (i32.add (local.get $allowed) (i32.load16_u (i32.add (local.get $access) (i32.shl (local.get $s) (i32.const 1)))))))
            (f64.gt (f64.load (i32.add (local.get $expires) (i32.shl (local.get $s) (i32.const 3)))) (local.get $now))))
        (i32.store8 (i32.add (local.get $mask) (local.get $s)) (local.get $m))
        (local.set $n (i32.add (local.get $n) (local.get $m)))
        (local.set $s (i32.add (local.get $s) (i32.const 1)))
        (br $each)))
    (local.get $n))

  ;; `collect` (sketch.ts): the admitted slots whose distance is below `cut`, and the first `atCut` at it, as
  ;; i32 at `out`, in slot order; answers how many.
  (func (export "collect") (param $mask i32) (param $dist i32) (param $count i32) (param $cut i32) (param $atCut i32) (param $out i32) (result i32)
    (local $s i32) (local $d i32) (local $n i32)
    (block $done
      (loop $each
        (br_if $done (i32.ge_u (local.get $s) (local.get $count)))
        (if (i32.load8_u (i32.add (local.get $mask) (local.get $s)))
          (then
            (local.set $d (i32.load16_u (i32.add (local.get $dist) (i32.shl (local.get $s) (i32.const 1)))))
            (if (i32.or
                  (i32.lt_u (local.get $d) (local.get $cut))
                  (i32.and (i32.eq (local.get $d) (local.get $cut)) (i32.gt_s (local.get $atCut) (i32.const 0))))
              (then
                (if (i32.eq (local.get $d) (local.get $cut))
                  (then (local.set $atCut (i32.sub (local.get $atCut) (i32.const 1)))))
                (i32.store (i32.add (local.get $out) (i32.shl (local.get $n) (i32.const 2))) (local.get $s))
                (local.set $n (i32.add (local.get $n) (i32.const 1)))))))
        (local.set $s (i32.add (local.get $s) (i32.const 1)))
        (br $each)))
    (local.get $n))

  ;; `asymmetric` (sketch.ts): for each of `n` listed slots (i32 slot numbers at `list`), the sum over its
  ;; code's `bytes` bytes of `table[byte index * 256 + byte value]` (f32): the query's dot product with the
  ;; code read as +1 and -1 per dimension, when the caller fills the table from the query. As f32 at `out`.
  (func (export "asymmetric") (param $codes i32) (param $list i32) (param $n i32) (param $bytes i32) (param $table i32) (param $out i32)
    (local $i i32) (local $code i32) (local $j i32) (local $row i32) (local $sum f32)
    (block $done
      (loop $each
        (br_if $done (i32.ge_u (local.get $i) (local.get $n)))
        (local.set $code
          (i32.add (local.get $codes) (i32.mul (i32.load (i32.add (local.get $list) (i32.shl (local.get $i) (i32.const 2)))) (local.get $bytes))))
        (local.set $j (i32.const 0))
        (local.set $row (local.get $table))
        (local.set $sum (f32.const 0))
        (block $bytes_done
          (loop $each_byte
            (br_if $bytes_done (i32.ge_u (local.get $j) (local.get $bytes)))
            (local.set $sum
              (f32.add (local.get $sum)
                (f32.load (i32.add (local.get $row) (i32.shl (i32.load8_u (i32.add (local.get $code) (local.get $j))) (i32.const 2))))))
            (local.set $row (i32.add (local.get $row) (i32.const 1024)))
            (local.set $j (i32.add (local.get $j) (i32.const 1)))
            (br $each_byte)))
        (f32.store (i32.add (local.get $out) (i32.shl (local.get $i) (i32.const 2))) (local.get $sum))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $each))))
)
