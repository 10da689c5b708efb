// The device and graph most programs here start from: Poplar's IPUModel with a given number of
// tiles, as PopLibs' test helpers make one, and a graph for its target.
#pragma once

#include <poplar/Graph.hpp>
#include <poplar/IPUModel.hpp>

struct ModelGraph {
  explicit ModelGraph(unsigned tiles) : device(modelDevice(tiles)), graph(device.getTarget()) {}

  poplar::Device device; // first: the graph is made from its target
  poplar::Graph graph;

private:
  static poplar::Device modelDevice(unsigned tiles) {
    poplar::IPUModel model;
    model.tilesPerIPU = tiles;
    return model.createDevice();
  }
};
