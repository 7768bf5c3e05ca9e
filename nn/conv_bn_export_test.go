package nn

// FoldedBatchNorm returns the batch norm folded into c's cached pack, or
// nil when the pack (if any) is of the weight alone.
func FoldedBatchNorm(c *Conv2d) *BatchNorm {
	if p := c.packs.cur.Load(); p != nil {
		return p.fold.bn
	}
	return nil
}
