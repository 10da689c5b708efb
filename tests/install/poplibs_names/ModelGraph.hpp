// The device and graph most programs here start from: Poplar's IPUModel with a given number of
// tiles, as PopLibs' test helpers make one, and a graph for its target; and what a bad model's
// createDevice() says (modelRefusal).
#pragma once

#include <poplar/Graph.hpp>
#include <poplar/IPUModel.hpp>
#include <poplar/exceptions.hpp>

#include <string>

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

// The message of the invalid_option a model's createDevice() raises, or "" when it makes a device.
inline std::string modelRefusal(const poplar::IPUModel &model) {
  try {
    model.createDevice();
  } catch (const poplar::invalid_option &e) {
    return e.what();
  }
  return "";
}
