"""Tests of the grading pipeline (attngrade); a package so its conftest does not shadow others."""
