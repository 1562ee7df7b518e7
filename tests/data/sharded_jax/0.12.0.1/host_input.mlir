module @jit_body attributes {mhlo.num_partitions = 8 : i32, mhlo.num_replicas = 1 : i32} {
  sdy.mesh @mesh = <["x"=2, "y"=4]> {stablehlo.mesh = {axes = [{name = "x", size = 2 : i64}, {name = "y", size = 4 : i64}]}}
  sdy.mesh @mesh_0 = <["x"=2, "y"=4]> {stablehlo.mesh = {axes = [{name = "x", size = 2 : i64}, {name = "y", size = 4 : i64}]}}
  func.func public @main(%arg0: tensor<8x32xf32>) -> (tensor<32x8xf32> {jax.result_info = "result[0]"}, tensor<32x8xf32> {jax.result_info = "result[1]"}, tensor<32x8xf32> {jax.result_info = "result[2]"}, tensor<32x8xf32> {jax.result_info = "result[3]"}, tensor<128x8xf32> {jax.result_info = "result[4]"}, tensor<32x4x8xf32> {jax.result_info = "result[5]"}, tensor<32x2xf32> {jax.result_info = "result[6]"}, tensor<128x2xf32> {jax.result_info = "result[7]"}, tensor<32x8xf32> {jax.result_info = "result[8]"}, tensor<32x8xf32> {jax.result_info = "result[9]"}) {
    %0:10 = sdy.manual_computation(%arg0) in_shardings=[<@mesh, [{"x"}, {"y"}]>] out_shardings=[<@mesh, [{"x", "y"}, {}]>, <@mesh, [{"x", "y"}, {}]>, <@mesh, [{"x", "y"}, {}]>, <@mesh, [{"x", "y"}, {}]>, <@mesh, [{"x", "y"}, {}]>, <@mesh, [{"x", "y"}, {}, {}]>, <@mesh, [{"x", "y"}, {}]>, <@mesh, [{"x", "y"}, {}]>, <@mesh, [{"x", "y"}, {}]>, <@mesh, [{"x", "y"}, {}]>] manual_axes={"x", "y"} (%arg1: tensor<4x8xf32>) {
      %1 = "stablehlo.all_reduce"(%arg1) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, replica_groups = #stablehlo.replica_group_mesh_axes<mesh = @mesh_0, axes = [#stablehlo.axis_ref<name = "y">]>, use_global_device_ids}> ({
      ^bb0(%arg2: tensor<f32>, %arg3: tensor<f32>):
        %20 = stablehlo.add %arg2, %arg3 : tensor<f32>
        stablehlo.return %20 : tensor<f32>
      }) : (tensor<4x8xf32>) -> tensor<4x8xf32>
      %2 = "stablehlo.all_reduce"(%arg1) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, replica_groups = #stablehlo.replica_group_mesh_axes<mesh = @mesh_0, axes = [#stablehlo.axis_ref<name = "y">]>, use_global_device_ids}> ({
      ^bb0(%arg2: tensor<f32>, %arg3: tensor<f32>):
        %20 = stablehlo.maximum %arg2, %arg3 : tensor<f32>
        stablehlo.return %20 : tensor<f32>
      }) : (tensor<4x8xf32>) -> tensor<4x8xf32>
      %3 = "stablehlo.all_reduce"(%arg1) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, replica_groups = #stablehlo.replica_group_mesh_axes<mesh = @mesh_0, axes = [#stablehlo.axis_ref<name = "y">]>, use_global_device_ids}> ({
      ^bb0(%arg2: tensor<f32>, %arg3: tensor<f32>):
        %20 = stablehlo.minimum %arg2, %arg3 : tensor<f32>
        stablehlo.return %20 : tensor<f32>
      }) : (tensor<4x8xf32>) -> tensor<4x8xf32>
      %4 = "stablehlo.all_reduce"(%arg1) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, replica_groups = #stablehlo.replica_group_mesh_axes<mesh = @mesh_0, axes = [#stablehlo.axis_ref<name = "y">]>, use_global_device_ids}> ({
      ^bb0(%arg2: tensor<f32>, %arg3: tensor<f32>):
        %20 = stablehlo.add %arg2, %arg3 : tensor<f32>
        stablehlo.return %20 : tensor<f32>
      }) : (tensor<4x8xf32>) -> tensor<4x8xf32>
      %cst = stablehlo.constant dense<4.000000e+00> : tensor<f32>
      %5 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<4x8xf32>
      %6 = stablehlo.divide %4, %5 : tensor<4x8xf32>
      %7 = "stablehlo.all_gather"(%arg1) <{all_gather_dim = 0 : i64, channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, replica_groups = #stablehlo.replica_group_mesh_axes<mesh = @mesh_0, axes = [#stablehlo.axis_ref<name = "y">]>, use_global_device_ids}> : (tensor<4x8xf32>) -> tensor<16x8xf32>
      %8 = stablehlo.broadcast_in_dim %arg1, dims = [0, 2] : (tensor<4x8xf32>) -> tensor<4x1x8xf32>
      %9 = "stablehlo.all_gather"(%8) <{all_gather_dim = 1 : i64, channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, replica_groups = #stablehlo.replica_group_mesh_axes<mesh = @mesh_0, axes = [#stablehlo.axis_ref<name = "y">]>, use_global_device_ids}> : (tensor<4x1x8xf32>) -> tensor<4x4x8xf32>
      %10 = "stablehlo.reduce_scatter"(%arg1) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, replica_groups = #stablehlo.replica_group_mesh_axes<mesh = @mesh_0, axes = [#stablehlo.axis_ref<name = "y">]>, scatter_dimension = 1 : i64, use_global_device_ids}> ({
      ^bb0(%arg2: tensor<f32>, %arg3: tensor<f32>):
        %20 = stablehlo.add %arg2, %arg3 : tensor<f32>
        stablehlo.return %20 : tensor<f32>
      }) : (tensor<4x8xf32>) -> tensor<4x2xf32>
      %11 = "stablehlo.all_to_all"(%arg1) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, concat_dimension = 0 : i64, replica_groups = #stablehlo.replica_group_mesh_axes<mesh = @mesh_0, axes = [#stablehlo.axis_ref<name = "y">]>, split_count = 4 : i64, split_dimension = 1 : i64}> : (tensor<4x8xf32>) -> tensor<16x2xf32>
      %c = stablehlo.constant dense<1> : tensor<ui32>
      %c_0 = stablehlo.constant dense<4> : tensor<ui32>
      %12 = stablehlo.partition_id : tensor<ui32>
      %13 = stablehlo.divide %12, %c : tensor<ui32>
      %14 = stablehlo.remainder %13, %c_0 : tensor<ui32>
      %15 = stablehlo.convert %14 : (tensor<ui32>) -> tensor<i32>
      %16 = stablehlo.convert %15 : (tensor<i32>) -> tensor<f32>
      %17 = stablehlo.broadcast_in_dim %16, dims = [] : (tensor<f32>) -> tensor<4x8xf32>
      %18 = stablehlo.add %arg1, %17 : tensor<4x8xf32>
      %19 = "stablehlo.collective_permute"(%arg1) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, source_target_pairs = dense<[[0, 1], [1, 2], [2, 3], [3, 0], [4, 5], [5, 6], [6, 7], [7, 4]]> : tensor<8x2xi64>}> : (tensor<4x8xf32>) -> tensor<4x8xf32>
      sdy.return %1, %2, %3, %6, %7, %9, %10, %11, %18, %19 : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<16x8xf32>, tensor<4x4x8xf32>, tensor<4x2xf32>, tensor<16x2xf32>, tensor<4x8xf32>, tensor<4x8xf32>
    } : (tensor<8x32xf32>) -> (tensor<32x8xf32>, tensor<32x8xf32>, tensor<32x8xf32>, tensor<32x8xf32>, tensor<128x8xf32>, tensor<32x4x8xf32>, tensor<32x2xf32>, tensor<128x2xf32>, tensor<32x8xf32>, tensor<32x8xf32>)
    return %0#0, %0#1, %0#2, %0#3, %0#4, %0#5, %0#6, %0#7, %0#8, %0#9 : tensor<32x8xf32>, tensor<32x8xf32>, tensor<32x8xf32>, tensor<32x8xf32>, tensor<128x8xf32>, tensor<32x4x8xf32>, tensor<32x2xf32>, tensor<128x2xf32>, tensor<32x8xf32>, tensor<32x8xf32>
  }
}
