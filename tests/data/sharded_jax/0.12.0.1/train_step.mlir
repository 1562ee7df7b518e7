module @jit_local attributes {mhlo.num_partitions = 4 : i32, mhlo.num_replicas = 1 : i32} {
  sdy.mesh @mesh = <["data"=4]> {stablehlo.mesh = {axes = [{name = "data", size = 4 : i64}]}}
  sdy.mesh @mesh_0 = <["data"=4]> {stablehlo.mesh = {axes = [{name = "data", size = 4 : i64}]}}
  func.func public @main(%arg0: tensor<8x3xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {}]>}, %arg1: tensor<16x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"data"}, {}]>}, %arg2: tensor<16x3xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"data"}, {}]>}) -> (tensor<8x3xf32> {jax.result_info = "result", sdy.sharding = #sdy.sharding<@mesh, [{}, {}]>}) {
    %0 = sdy.manual_computation(%arg0, %arg1, %arg2) in_shardings=[<@mesh, [{}, {}]>, <@mesh, [{"data"}, {}]>, <@mesh, [{"data"}, {}]>] out_shardings=[<@mesh, [{}, {}]>] manual_axes={"data"} (%arg3: tensor<8x3xf32>, %arg4: tensor<4x8xf32>, %arg5: tensor<4x3xf32>) {
      %1 = stablehlo.dot_general %arg4, %arg3, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<4x8xf32>, tensor<8x3xf32>) -> tensor<4x3xf32>
      %2 = stablehlo.subtract %1, %arg5 : tensor<4x3xf32>
      %cst = stablehlo.constant dense<2.000000e+00> : tensor<f32>
      %3 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<4x3xf32>
      %4 = stablehlo.multiply %3, %2 : tensor<4x3xf32>
      %cst_0 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
      %cst_1 = stablehlo.constant dense<1.200000e+01> : tensor<f32>
      %5 = stablehlo.divide %cst_0, %cst_1 : tensor<f32>
      %6 = stablehlo.broadcast_in_dim %5, dims = [] : (tensor<f32>) -> tensor<4x3xf32>
      %7 = stablehlo.multiply %6, %4 : tensor<4x3xf32>
      %8 = stablehlo.dot_general %7, %arg4, contracting_dims = [0] x [0], precision = [DEFAULT, DEFAULT] : (tensor<4x3xf32>, tensor<4x8xf32>) -> tensor<3x8xf32>
      %9 = stablehlo.transpose %8, dims = [1, 0] : (tensor<3x8xf32>) -> tensor<8x3xf32>
      %10 = "stablehlo.all_reduce"(%9) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, replica_groups = #stablehlo.replica_group_mesh_axes<mesh = @mesh_0, axes = [#stablehlo.axis_ref<name = "data">]>, use_global_device_ids}> ({
      ^bb0(%arg6: tensor<f32>, %arg7: tensor<f32>):
        %16 = stablehlo.add %arg6, %arg7 : tensor<f32>
        stablehlo.return %16 : tensor<f32>
      }) : (tensor<8x3xf32>) -> tensor<8x3xf32>
      %cst_2 = stablehlo.constant dense<4.000000e+00> : tensor<f32>
      %11 = stablehlo.broadcast_in_dim %cst_2, dims = [] : (tensor<f32>) -> tensor<8x3xf32>
      %12 = stablehlo.divide %10, %11 : tensor<8x3xf32>
      %cst_3 = stablehlo.constant dense<1.000000e-01> : tensor<f32>
      %13 = stablehlo.broadcast_in_dim %cst_3, dims = [] : (tensor<f32>) -> tensor<8x3xf32>
      %14 = stablehlo.multiply %13, %12 : tensor<8x3xf32>
      %15 = stablehlo.subtract %arg3, %14 : tensor<8x3xf32>
      sdy.return %15 : tensor<8x3xf32>
    } : (tensor<8x3xf32>, tensor<16x8xf32>, tensor<16x3xf32>) -> tensor<8x3xf32>
    return %0 : tensor<8x3xf32>
  }
}
