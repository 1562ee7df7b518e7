module @jit_f attributes {mhlo.num_partitions = 8 : i32, mhlo.num_replicas = 1 : i32} {
  sdy.mesh @mesh = <["data"=4, "model"=2]> {stablehlo.mesh = {axes = [{name = "data", size = 4 : i64}, {name = "model", size = 2 : i64}]}}
  func.func public @main(%arg0: tensor<16x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"data"}, {}]>}, %arg1: tensor<8x6xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"model"}]>}, %arg2: tensor<6xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"model"}]>}) -> (tensor<16x6xf32> {jax.result_info = "result[0]", sdy.sharding = #sdy.sharding<@mesh, [{"data"}, {"model"}]>}, tensor<f32> {jax.result_info = "result[1]", sdy.sharding = #sdy.sharding<@mesh, []>}) {
    %0 = stablehlo.dot_general %arg0, %arg1, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<16x8xf32>, tensor<8x6xf32>) -> tensor<16x6xf32>
    %1 = stablehlo.broadcast_in_dim %arg2, dims = [1] : (tensor<6xf32>) -> tensor<1x6xf32>
    %2 = stablehlo.broadcast_in_dim %1, dims = [0, 1] : (tensor<1x6xf32>) -> tensor<16x6xf32>
    %3 = stablehlo.add %0, %2 : tensor<16x6xf32>
    %4 = stablehlo.tanh %3 : tensor<16x6xf32>
    %5 = stablehlo.multiply %4, %4 : tensor<16x6xf32>
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %6 = stablehlo.reduce(%5 init: %cst) applies stablehlo.add across dimensions = [0, 1] : (tensor<16x6xf32>, tensor<f32>) -> tensor<f32>
    %cst_0 = stablehlo.constant dense<9.600000e+01> : tensor<f32>
    %7 = stablehlo.divide %6, %cst_0 : tensor<f32>
    return %4, %7 : tensor<16x6xf32>, tensor<f32>
  }
}
