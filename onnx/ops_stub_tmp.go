package onnx

func nnOps() opTable     { return opTable{} }
func reduceOps() opTable { return opTable{} }
