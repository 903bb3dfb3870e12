"""One module per case of Tools/bench, each a mixin of `runner.Bench`, named for its number and what it measures."""
