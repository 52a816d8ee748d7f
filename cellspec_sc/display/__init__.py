"""How cells look on screen, shared by the notebook widgets and the Luxar bridge: colours, robust display
ranges and HTML fragments."""
