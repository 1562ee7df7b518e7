module @jit_body attributes {mhlo.num_partitions = 8 : i32, mhlo.num_replicas = 1 : i32} {
  sdy.mesh @mesh = <["x"=2, "y"=4]> {stablehlo.mesh = {axes = [{name = "x", size = 2 : i64}, {name = "y", size = 4 : i64}]}}
  func.func public @main(%arg0: tensor<8x32xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {"y"}]>}) -> (tensor<32x8xf32> {jax.result_info = "result[0]"}, tensor<32x8xf32> {jax.result_info = "result[1]"}, tensor<32x8xf32> {jax.result_info = "result[2]"}, tensor<32x8xf32> {jax.result_info = "result[3]"}, tensor<256x8xf32> {jax.result_info = "result[4]"}, tensor<32x8x8xf32> {jax.result_info = "result[5]"}, tensor<32x1xf32> {jax.result_info = "result[6]"}, tensor<256x1xf32> {jax.result_info = "result[7]"}, tensor<32x8xf32> {jax.result_info = "result[8]"}) {
    %0:9 = sdy.manual_computation(%arg0) in_shardings=[<@mesh, [{"x"}, {"y"}]>] out_shardings=[<@mesh, [{"x", "y"}, {}]>, <@mesh, [{"x", "y"}, {}]>, <@mesh, [{"x", "y"}, {}]>, <@mesh, [{"x", "y"}, {}]>, <@mesh, [{"x", "y"}, {}]>, <@mesh, [{"x", "y"}, {}, {}]>, <@mesh, [{"x", "y"}, {}]>, <@mesh, [{"x", "y"}, {}]>, <@mesh, [{"x", "y"}, {}]>] manual_axes={"x", "y"} (%arg1: tensor<4x8xf32>) {
      %1 = "stablehlo.all_reduce"(%arg1) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, replica_groups = dense<[[0, 4, 1, 5, 2, 6, 3, 7]]> : tensor<1x8xi64>, use_global_device_ids}> ({
      ^bb0(%arg2: tensor<f32>, %arg3: tensor<f32>):
        %27 = stablehlo.add %arg2, %arg3 : tensor<f32>
        stablehlo.return %27 : tensor<f32>
      }) : (tensor<4x8xf32>) -> tensor<4x8xf32>
      %2 = "stablehlo.all_reduce"(%arg1) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, replica_groups = dense<[[0, 4, 1, 5, 2, 6, 3, 7]]> : tensor<1x8xi64>, use_global_device_ids}> ({
      ^bb0(%arg2: tensor<f32>, %arg3: tensor<f32>):
        %27 = stablehlo.maximum %arg2, %arg3 : tensor<f32>
        stablehlo.return %27 : tensor<f32>
      }) : (tensor<4x8xf32>) -> tensor<4x8xf32>
      %3 = "stablehlo.all_reduce"(%arg1) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, replica_groups = dense<[[0, 4, 1, 5, 2, 6, 3, 7]]> : tensor<1x8xi64>, use_global_device_ids}> ({
      ^bb0(%arg2: tensor<f32>, %arg3: tensor<f32>):
        %27 = stablehlo.minimum %arg2, %arg3 : tensor<f32>
        stablehlo.return %27 : tensor<f32>
      }) : (tensor<4x8xf32>) -> tensor<4x8xf32>
      %4 = "stablehlo.all_reduce"(%arg1) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, replica_groups = dense<[[0, 4, 1, 5, 2, 6, 3, 7]]> : tensor<1x8xi64>, use_global_device_ids}> ({
      ^bb0(%arg2: tensor<f32>, %arg3: tensor<f32>):
        %27 = stablehlo.add %arg2, %arg3 : tensor<f32>
        stablehlo.return %27 : tensor<f32>
      }) : (tensor<4x8xf32>) -> tensor<4x8xf32>
      %cst = stablehlo.constant dense<8.000000e+00> : tensor<f32>
      %5 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<4x8xf32>
      %6 = stablehlo.divide %4, %5 : tensor<4x8xf32>
      %7 = "stablehlo.all_gather"(%arg1) <{all_gather_dim = 0 : i64, channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, replica_groups = dense<[[0, 4, 1, 5, 2, 6, 3, 7]]> : tensor<1x8xi64>, use_global_device_ids}> : (tensor<4x8xf32>) -> tensor<32x8xf32>
      %8 = stablehlo.broadcast_in_dim %arg1, dims = [0, 2] : (tensor<4x8xf32>) -> tensor<4x1x8xf32>
      %9 = "stablehlo.all_gather"(%8) <{all_gather_dim = 1 : i64, channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, replica_groups = dense<[[0, 4, 1, 5, 2, 6, 3, 7]]> : tensor<1x8xi64>, use_global_device_ids}> : (tensor<4x1x8xf32>) -> tensor<4x8x8xf32>
      %10 = "stablehlo.reduce_scatter"(%arg1) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, replica_groups = dense<[[0, 4, 1, 5, 2, 6, 3, 7]]> : tensor<1x8xi64>, scatter_dimension = 1 : i64, use_global_device_ids}> ({
      ^bb0(%arg2: tensor<f32>, %arg3: tensor<f32>):
        %27 = stablehlo.add %arg2, %arg3 : tensor<f32>
        stablehlo.return %27 : tensor<f32>
      }) : (tensor<4x8xf32>) -> tensor<4x1xf32>
      %11 = "stablehlo.all_to_all"(%arg1) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, concat_dimension = 0 : i64, replica_groups = dense<[[0, 4, 1, 5, 2, 6, 3, 7]]> : tensor<1x8xi64>, split_count = 8 : i64, split_dimension = 1 : i64}> : (tensor<4x8xf32>) -> tensor<32x1xf32>
      %c = stablehlo.constant dense<4> : tensor<ui32>
      %c_0 = stablehlo.constant dense<2> : tensor<ui32>
      %12 = stablehlo.partition_id : tensor<ui32>
      %13 = stablehlo.divide %12, %c : tensor<ui32>
      %14 = stablehlo.remainder %13, %c_0 : tensor<ui32>
      %15 = stablehlo.convert %14 : (tensor<ui32>) -> tensor<i32>
      %c_1 = stablehlo.constant dense<1> : tensor<i32>
      %16 = stablehlo.multiply %15, %c_1 : tensor<i32>
      %c_2 = stablehlo.constant dense<0> : tensor<i32>
      %17 = stablehlo.add %c_2, %16 : tensor<i32>
      %c_3 = stablehlo.constant dense<1> : tensor<ui32>
      %c_4 = stablehlo.constant dense<4> : tensor<ui32>
      %18 = stablehlo.partition_id : tensor<ui32>
      %19 = stablehlo.divide %18, %c_3 : tensor<ui32>
      %20 = stablehlo.remainder %19, %c_4 : tensor<ui32>
      %21 = stablehlo.convert %20 : (tensor<ui32>) -> tensor<i32>
      %c_5 = stablehlo.constant dense<2> : tensor<i32>
      %22 = stablehlo.multiply %21, %c_5 : tensor<i32>
      %23 = stablehlo.add %17, %22 : tensor<i32>
      %24 = stablehlo.convert %23 : (tensor<i32>) -> tensor<f32>
      %25 = stablehlo.broadcast_in_dim %24, dims = [] : (tensor<f32>) -> tensor<4x8xf32>
      %26 = stablehlo.add %arg1, %25 : tensor<4x8xf32>
      sdy.return %1, %2, %3, %6, %7, %9, %10, %11, %26 : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<32x8xf32>, tensor<4x8x8xf32>, tensor<4x1xf32>, tensor<32x1xf32>, tensor<4x8xf32>
    } : (tensor<8x32xf32>) -> (tensor<32x8xf32>, tensor<32x8xf32>, tensor<32x8xf32>, tensor<32x8xf32>, tensor<256x8xf32>, tensor<32x8x8xf32>, tensor<32x1xf32>, tensor<256x1xf32>, tensor<32x8xf32>)
    return %0#0, %0#1, %0#2, %0#3, %0#4, %0#5, %0#6, %0#7, %0#8 : tensor<32x8xf32>, tensor<32x8xf32>, tensor<32x8xf32>, tensor<32x8xf32>, tensor<256x8xf32>, tensor<32x8x8xf32>, tensor<32x1xf32>, tensor<256x1xf32>, tensor<32x8xf32>
  }
}
