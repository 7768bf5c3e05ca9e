package onnx

func shapeOps() opTable  { return opTable{} }
func nnOps() opTable     { return opTable{} }
func reduceOps() opTable { return opTable{} }
