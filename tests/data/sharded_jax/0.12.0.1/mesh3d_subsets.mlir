module @jit_body attributes {mhlo.num_partitions = 8 : i32, mhlo.num_replicas = 1 : i32} {
  sdy.mesh @mesh = <["a"=2, "b"=2, "c"=2]> {stablehlo.mesh = {axes = [{name = "a", size = 2 : i64}, {name = "b", size = 2 : i64}, {name = "c", size = 2 : i64}]}}
  sdy.mesh @mesh_0 = <["a"=2, "b"=2, "c"=2]> {stablehlo.mesh = {axes = [{name = "a", size = 2 : i64}, {name = "b", size = 2 : i64}, {name = "c", size = 2 : i64}]}}
  func.func public @main(%arg0: tensor<16x32xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"a", "b"}, {"c"}]>}) -> (tensor<32x16xf32> {jax.result_info = "result[0]"}, tensor<32x16xf32> {jax.result_info = "result[1]"}, tensor<32x64xf32> {jax.result_info = "result[2]"}, tensor<8x16xf32> {jax.result_info = "result[3]"}, tensor<32x16xf32> {jax.result_info = "result[4]"}, tensor<16x32xf32> {jax.result_info = "result[5]"}, tensor<32x16xf32> {jax.result_info = "result[6]"}, tensor<32x16xf32> {jax.result_info = "result[7]"}) {
    %0:8 = sdy.manual_computation(%arg0) in_shardings=[<@mesh, [{"a", "b"}, {"c"}]>] out_shardings=[<@mesh, [{"a", "b", "c"}, {}]>, <@mesh, [{"a", "b", "c"}, {}]>, <@mesh, [{"a", "b", "c"}, {}]>, <@mesh, [{"a", "b", "c"}, {}]>, <@mesh, [{"a", "b", "c"}, {}]>, <@mesh, [{"a", "b", "c"}, {}]>, <@mesh, [{"a", "b", "c"}, {}]>, <@mesh, [{"a", "b", "c"}, {}]>] manual_axes={"a", "b", "c"} (%arg1: tensor<4x16xf32>) {
      %1 = "stablehlo.all_reduce"(%arg1) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, replica_groups = #stablehlo.replica_group_mesh_axes<mesh = @mesh_0, axes = [#stablehlo.axis_ref<name = "b">]>, use_global_device_ids}> ({
      ^bb0(%arg2: tensor<f32>, %arg3: tensor<f32>):
        %23 = stablehlo.add %arg2, %arg3 : tensor<f32>
        stablehlo.return %23 : tensor<f32>
      }) : (tensor<4x16xf32>) -> tensor<4x16xf32>
      %2 = "stablehlo.all_reduce"(%arg1) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, replica_groups = #stablehlo.replica_group_mesh_axes<mesh = @mesh_0, axes = [#stablehlo.axis_ref<name = "a">, #stablehlo.axis_ref<name = "c">]>, use_global_device_ids}> ({
      ^bb0(%arg2: tensor<f32>, %arg3: tensor<f32>):
        %23 = stablehlo.add %arg2, %arg3 : tensor<f32>
        stablehlo.return %23 : tensor<f32>
      }) : (tensor<4x16xf32>) -> tensor<4x16xf32>
      %3 = "stablehlo.all_gather"(%arg1) <{all_gather_dim = 1 : i64, channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, replica_groups = #stablehlo.replica_group_mesh_axes<mesh = @mesh_0, axes = [#stablehlo.axis_ref<name = "c">, #stablehlo.axis_ref<name = "a">]>, use_global_device_ids}> : (tensor<4x16xf32>) -> tensor<4x64xf32>
      %4 = "stablehlo.reduce_scatter"(%arg1) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, replica_groups = #stablehlo.replica_group_mesh_axes<mesh = @mesh_0, axes = [#stablehlo.axis_ref<name = "a">, #stablehlo.axis_ref<name = "b">]>, scatter_dimension = 0 : i64, use_global_device_ids}> ({
      ^bb0(%arg2: tensor<f32>, %arg3: tensor<f32>):
        %23 = stablehlo.add %arg2, %arg3 : tensor<f32>
        stablehlo.return %23 : tensor<f32>
      }) : (tensor<4x16xf32>) -> tensor<1x16xf32>
      %5 = "stablehlo.all_reduce"(%arg1) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, replica_groups = #stablehlo.replica_group_mesh_axes<mesh = @mesh_0, axes = [#stablehlo.axis_ref<name = "b">, #stablehlo.axis_ref<name = "c">]>, use_global_device_ids}> ({
      ^bb0(%arg2: tensor<f32>, %arg3: tensor<f32>):
        %23 = stablehlo.maximum %arg2, %arg3 : tensor<f32>
        stablehlo.return %23 : tensor<f32>
      }) : (tensor<4x16xf32>) -> tensor<4x16xf32>
      %6 = "stablehlo.all_to_all"(%arg1) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, concat_dimension = 1 : i64, replica_groups = #stablehlo.replica_group_mesh_axes<mesh = @mesh_0, axes = [#stablehlo.axis_ref<name = "c">]>, split_count = 2 : i64, split_dimension = 0 : i64}> : (tensor<4x16xf32>) -> tensor<2x32xf32>
      %7 = "stablehlo.collective_permute"(%arg1) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, source_target_pairs = dense<[[0, 4], [4, 0], [1, 5], [5, 1], [2, 6], [6, 2], [3, 7], [7, 3]]> : tensor<8x2xi64>}> : (tensor<4x16xf32>) -> tensor<4x16xf32>
      %c = stablehlo.constant dense<2> : tensor<ui32>
      %c_0 = stablehlo.constant dense<2> : tensor<ui32>
      %8 = stablehlo.partition_id : tensor<ui32>
      %9 = stablehlo.divide %8, %c : tensor<ui32>
      %10 = stablehlo.remainder %9, %c_0 : tensor<ui32>
      %11 = stablehlo.convert %10 : (tensor<ui32>) -> tensor<i32>
      %c_1 = stablehlo.constant dense<1> : tensor<i32>
      %12 = stablehlo.multiply %11, %c_1 : tensor<i32>
      %c_2 = stablehlo.constant dense<0> : tensor<i32>
      %13 = stablehlo.add %c_2, %12 : tensor<i32>
      %c_3 = stablehlo.constant dense<1> : tensor<ui32>
      %c_4 = stablehlo.constant dense<2> : tensor<ui32>
      %14 = stablehlo.partition_id : tensor<ui32>
      %15 = stablehlo.divide %14, %c_3 : tensor<ui32>
      %16 = stablehlo.remainder %15, %c_4 : tensor<ui32>
      %17 = stablehlo.convert %16 : (tensor<ui32>) -> tensor<i32>
      %c_5 = stablehlo.constant dense<2> : tensor<i32>
      %18 = stablehlo.multiply %17, %c_5 : tensor<i32>
      %19 = stablehlo.add %13, %18 : tensor<i32>
      %20 = stablehlo.convert %19 : (tensor<i32>) -> tensor<f32>
      %21 = stablehlo.broadcast_in_dim %20, dims = [] : (tensor<f32>) -> tensor<4x16xf32>
      %22 = stablehlo.multiply %arg1, %21 : tensor<4x16xf32>
      sdy.return %1, %2, %3, %4, %5, %6, %7, %22 : tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x64xf32>, tensor<1x16xf32>, tensor<4x16xf32>, tensor<2x32xf32>, tensor<4x16xf32>, tensor<4x16xf32>
    } : (tensor<16x32xf32>) -> (tensor<32x16xf32>, tensor<32x16xf32>, tensor<32x64xf32>, tensor<8x16xf32>, tensor<32x16xf32>, tensor<16x32xf32>, tensor<32x16xf32>, tensor<32x16xf32>)
    return %0#0, %0#1, %0#2, %0#3, %0#4, %0#5, %0#6, %0#7 : tensor<32x16xf32>, tensor<32x16xf32>, tensor<32x64xf32>, tensor<8x16xf32>, tensor<32x16xf32>, tensor<16x32xf32>, tensor<32x16xf32>, tensor<32x16xf32>
  }
}
