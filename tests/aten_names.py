"""The aten ops' names, as the aten tests spell them."""
PT = "fake_quantize_per_tensor_affine"
PTM = "fake_quantize_per_tensor_affine_cachemask"
TQ = "_fake_quantize_per_tensor_affine_cachemask_tensor_qparams"
PC = "fake_quantize_per_channel_affine"
PCM = "fake_quantize_per_channel_affine_cachemask"
PTB = "fake_quantize_per_tensor_affine_cachemask_backward"
PCB = "fake_quantize_per_channel_affine_cachemask_backward"
LT = "_fake_quantize_learnable_per_tensor_affine"          # LSQ (the learnable ops): a float zero point
LC = "_fake_quantize_learnable_per_channel_affine"
LTB = "_fake_quantize_learnable_per_tensor_affine_backward"
LCB = "_fake_quantize_learnable_per_channel_affine_backward"
FO = "fused_moving_avg_obs_fake_quant"                   # the fused observer (functional: its state returned)
