#pragma once
namespace anchorage::kernels {

// Shapes shared by the two forms of the gated delta rule.
// qkv rows (row stride `stride` floats) hold [q: hk*dk | k: hk*dk | v: hv*dv]; q and k are already
// L2-normalised. g (log decay) and beta are [T][hv] contiguous. The state s is [hv][dk][dv].
// The output o is [T][hv*dv] contiguous. Value head h reads key head h / (hv / hk).
struct gdn_shape {
  int tokens;
  int hk;
  int hv;
  int dk;
  int dv;
  int stride;
  float scale;  // applied to q (1/sqrt(dk))
  int chunk;    // sub-chunk length of the chunked form, counted from row 0
};

}  // namespace anchorage::kernels
