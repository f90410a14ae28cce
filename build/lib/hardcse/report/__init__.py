"""Tables, plots and manifests of results."""
