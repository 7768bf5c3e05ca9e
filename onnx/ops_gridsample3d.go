package onnx

import (
	"fmt"
	"math"

	"github.com/emberml/ember/tensor"
)

// gridSample3d is volumetric GridSample (opset 20): input [N, C, D, H, W]
// sampled at grid [N, Do, Ho, Wo, 3], whose last axis holds normalized
// (x, y, z) coordinates in [-1, 1] along W, H and D. Modes "nearest" and
// "linear" (trilinear); padding "zeros", "border" or "reflection".
func gridSample3d(n *node, x, grid *tensor.Tensor) (*tensor.Tensor, error) {
	xs, gs := x.Shape(), grid.Shape()
	if len(gs) != 5 || gs[0] != xs[0] || gs[4] != 3 {
		return nil, fmt.Errorf("onnx: %v: input %v and grid %v must be [N, C, D, H, W] and [N, Do, Ho, Wo, 3]", n, xs, gs)
	}
	mode := n.attrString("mode", "linear")
	switch mode {
	case "bilinear":
		mode = "linear"
	case "nearest", "linear":
	default:
		return nil, fmt.Errorf("onnx: %v: mode %q is not defined for volumetric input (want linear or nearest)", n, mode)
	}
	padMode := n.attrString("padding_mode", "zeros")
	if padMode != "zeros" && padMode != "border" && padMode != "reflection" {
		return nil, fmt.Errorf("onnx: %v: unknown padding_mode %q", n, padMode)
	}
	align := n.attrInt("align_corners", 0) == 1
	N, C, D, H, W := xs[0], xs[1], xs[2], xs[3], xs[4]
	Do, Ho, Wo := gs[1], gs[2], gs[3]
	if err := n.checkShape([]int{N, C, Do, Ho, Wo}, tensor.Float64); err != nil {
		return nil, err
	}
	xv, gv := x.Float64s(), grid.Float64s()
	out := make([]float64, N*C*Do*Ho*Wo)
	unnorm := func(c float64, size int) float64 {
		if align {
			return (c + 1) / 2 * float64(size-1)
		}
		return ((c+1)*float64(size) - 1) / 2
	}
	fix := func(c float64, size int) float64 {
		switch padMode {
		case "border":
			return min(max(c, 0), float64(size-1))
		case "reflection":
			if align {
				c = reflectCoord(c, 0, 2*(size-1))
			} else {
				c = reflectCoord(c, -1, 2*size-1)
			}
			return min(max(c, 0), float64(size-1))
		}
		return c
	}
	outPlane := Do * Ho * Wo
	for b := range N {
		for o := range outPlane {
			g := gv[(b*outPlane+o)*3:][:3]
			fx, fy, fz := fix(unnorm(g[0], W), W), fix(unnorm(g[1], H), H), fix(unnorm(g[2], D), D)
			for c := range C {
				vol := xv[(b*C+c)*D*H*W:][:D*H*W]
				at := func(z, y, x int) float64 {
					if z >= 0 && z < D && y >= 0 && y < H && x >= 0 && x < W {
						return vol[(z*H+y)*W+x]
					}
					return 0
				}
				var v float64
				if mode == "nearest" {
					v = at(int(math.RoundToEven(fz)), int(math.RoundToEven(fy)), int(math.RoundToEven(fx)))
				} else {
					x0, y0, z0 := int(math.Floor(fx)), int(math.Floor(fy)), int(math.Floor(fz))
					tx, ty, tz := fx-float64(x0), fy-float64(y0), fz-float64(z0)
					for dz := range 2 {
						wz := 1 - tz
						if dz == 1 {
							wz = tz
						}
						for dy := range 2 {
							wy := 1 - ty
							if dy == 1 {
								wy = ty
							}
							for dx := range 2 {
								wx := 1 - tx
								if dx == 1 {
									wx = tx
								}
								v += wz * wy * wx * at(z0+dz, y0+dy, x0+dx)
							}
						}
					}
				}
				out[(b*C+c)*outPlane+o] = v
			}
		}
	}
	return tensor.FromSlice(out, N, C, Do, Ho, Wo).To(x.DType()), nil
}
