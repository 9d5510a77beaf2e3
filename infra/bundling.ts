/**
 * Modules the Lambda bundles leave out: onnxruntime-node is a native library (local ONNX
 * encoders on Lambda need a layer that provides it; provider embedders and the LLM-as-NLI run
 * without it). Shared by the CDK functions and the bench that builds the same bundles.
 */
export const EXTERNAL_MODULES = ['onnxruntime-node'];
