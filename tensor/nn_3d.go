package tensor

// Conv3dOptions configures a 3-d convolution over NCDHW volumes. Zero
// values mean PyTorch's defaults: stride 1, padding 0, dilation 1, groups
// 1. Index 0 is the depth axis, 1 the height axis and 2 the width axis.
type Conv3dOptions struct {
	Stride, Padding, Dilation [3]int
	Groups                    int
}

// ConvTranspose3dOptions configures a 3-d transposed convolution; zero
// values mean stride 1, padding 0, output padding 0, dilation 1, groups 1.
// OutputPadding adds planes on the far side of each axis of the output and
// must be smaller than the stride or the dilation of that axis.
type ConvTranspose3dOptions struct {
	Stride, Padding, OutputPadding, Dilation [3]int
	Groups                                   int
}

// Pool3dOptions configures 3-d max and average pooling. Index 0 is the
// depth axis, 1 the height axis and 2 the width axis. Kernel is required;
// a zero Stride means the kernel size and a zero Dilation means 1, as in
// PyTorch. CeilMode rounds the output size up; CountIncludePad (average
// pooling only) divides by the window size including zero padding.
// Average pooling has no dilation.
type Pool3dOptions struct {
	Kernel, Stride, Padding, Dilation [3]int
	CeilMode, CountIncludePad         bool
}
