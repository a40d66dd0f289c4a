"""Test fixtures: bulk downloads and grade files as Canvas, Moodle, Blackboard, Brightspace and Gradescope write them."""
